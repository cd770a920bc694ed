using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Options;
using SocketServers.Echo;

namespace SocketServers.Tests;

/// <summary>The servers inside a Generic Host: registered with <see cref="SocketServerServiceCollectionExtensions"/>,
/// started and stopped by the host, configured from its configuration, logging through its loggers.</summary>
public sealed class SocketServerServiceCollectionExtensionsTests
{
    // The README's sample, with port 0 for the test.
    [Test]
    [CancelAfter(30_000)]
    public async Task Host_ServersAdded_StartEchoAndStopWithTheHost(CancellationToken cancellationToken)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?>
        {
            ["Echo:Tcp:Port"] = "0",
            ["Echo:Tcp:MaxConnections"] = "10",
        });
        builder.Services.AddTcpEchoServer(builder.Configuration.GetSection("Echo:Tcp"));
        builder.Services.AddUdpEchoServer(options => options.Port = 0);
        using IHost host = builder.Build();
        using var poolCaps = new MetricCollector<long>(null, "PoolLib", "pool.objects.max");

        await host.StartAsync(cancellationToken);
        TcpEchoServer tcp = host.Services.GetRequiredService<TcpEchoServer>();
        UdpEchoServer udp = host.Services.GetRequiredService<UdpEchoServer>();
        Assert.That((tcp.IsRunning, udp.IsRunning), Is.EqualTo((true, true)));
        poolCaps.RecordObservableInstruments();
        Assert.That(
            poolCaps.GetMeasurementSnapshot().Where(cap => Equals(cap.Tags["pool.name"], $"tcp-echo-args@{tcp.LocalEndPoint}")).Select(cap => cap.Value),
            Is.Not.Empty.And.All.EqualTo(10),
            "the configured MaxConnections is the TCP server's cap");
        await SocketTestExtensions.AssertEchoesAsync(tcp.LocalEndPoint!, 100, cancellationToken);
        await AssertUdpEchoesAsync(udp.LocalEndPoint!, cancellationToken);
        await host.StopAsync(cancellationToken);

        Assert.That((tcp.IsRunning, udp.IsRunning), Is.EqualTo((false, false)));
        Assert.That((tcp.Counters.TotalConnections, udp.Counters.MessagesHandled), Is.EqualTo((1, 1)));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Host_WithLogging_ServersLogThroughTheHostsLoggers(CancellationToken cancellationToken)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
        builder.Logging.ClearProviders();
        builder.Logging.AddFakeLogging();
        builder.Services.AddTcpEchoServer(options => options.Port = 0);
        using IHost host = builder.Build();

        await host.StartAsync(cancellationToken);
        await host.StopAsync(cancellationToken);

        FakeLogRecord[] records = [.. host.Services.GetFakeLogCollector().GetSnapshot().Where(record => record.Category == typeof(TcpEchoServer).FullName)];
        Assert.That(records.Select(record => record.Message), Has.Some.StartsWith("TCP echo server listening on 127.0.0.1:"));
        Assert.That(records.Select(record => record.Message), Has.Some.StartsWith("TCP echo server on 127.0.0.1:").And.Contains("stopped"));
    }

    // The name the docs state: other code configures a handler's server under it, after AddTcpServer, and the server
    // runs with what it set.
    [Test]
    [CancelAfter(30_000)]
    public async Task OptionsName_PostConfiguredUnderIt_TheHandlersServerRunsWithIt(CancellationToken cancellationToken)
    {
        string name = SocketServerServiceCollectionExtensions.OptionsName<EchoConnectionHandler>();
        var services = new ServiceCollection();
        services.AddTcpServer<EchoConnectionHandler>(options => options.Port = 0);
        services.PostConfigure<TcpServerOptions>(name, options => options.MaxConnections = 7);
        await using ServiceProvider provider = services.BuildServiceProvider();
        using var poolCaps = new MetricCollector<long>(null, "PoolLib", "pool.objects.max");

        TcpServer<EchoConnectionHandler> server = provider.GetRequiredService<TcpServer<EchoConnectionHandler>>();
        await server.StartAsync(cancellationToken);
        poolCaps.RecordObservableInstruments();

        Assert.That(name, Is.EqualTo("SocketServers.Echo.EchoConnectionHandler"));
        Assert.That(provider.GetRequiredService<IOptionsMonitor<TcpServerOptions>>().Get(name).MaxConnections, Is.EqualTo(7));
        Assert.That(
            poolCaps.GetMeasurementSnapshot().Where(cap => Equals(cap.Tags["pool.name"], $"tcp-args@{server.LocalEndPoint}")).Select(cap => cap.Value),
            Is.Not.Empty.And.All.EqualTo(7),
            "the post-configured MaxConnections is the server's cap");
        await server.StopAsync(cancellationToken);
    }

    [Test]
    public async Task AddTcpEchoServer_CalledTwice_OneServerWithBothCallsOptions()
    {
        var services = new ServiceCollection();
        services.AddTcpEchoServer(options => options.Port = 0);
        services.AddTcpEchoServer(options => options.MaxConnections = 3);
        await using ServiceProvider provider = services.BuildServiceProvider();

        IHostedService[] hosted = [.. provider.GetServices<IHostedService>()];
        TcpEchoServer server = provider.GetRequiredService<TcpEchoServer>();

        Assert.That(hosted, Is.EqualTo(new IHostedService[] { server }));
        Assert.That(server.Counters.PoolTotalCount, Is.Zero);
        IOptions<TcpEchoServerOptions> options = provider.GetRequiredService<IOptions<TcpEchoServerOptions>>();
        Assert.That((options.Value.Port, options.Value.MaxConnections), Is.EqualTo((0, 3)));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Host_InvalidConfiguration_StartThrowsNamingTheKey(CancellationToken cancellationToken)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
        builder.Configuration.AddInMemoryCollection(new Dictionary<string, string?> { ["Echo:Udp:Port"] = "70000" });
        builder.Services.AddUdpEchoServer(builder.Configuration.GetSection("Echo:Udp"));
        using IHost host = builder.Build();

        var exception = await Assert.ThrowsAsync<OptionsValidationException>(() => host.StartAsync(cancellationToken));

        Assert.That(exception!.Message, Does.Contain("'Echo:Udp:Port' = '70000'"));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Host_PortInUse_StartThrowsIOException(CancellationToken cancellationToken)
    {
        using var taken = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        taken.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        taken.Listen();
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateApplicationBuilder();
        builder.Services.AddTcpEchoServer(options => options.Port = ((IPEndPoint)taken.LocalEndPoint!).Port);
        using IHost host = builder.Build();

        await Assert.ThrowsAsync<IOException>(() => host.StartAsync(cancellationToken));

        Assert.That(host.Services.GetRequiredService<TcpEchoServer>().IsRunning, Is.False);
    }

    [Test]
    public void AddTcpEchoServer_NullArguments_Throw()
    {
        var services = new ServiceCollection();

        Assert.Multiple(() =>
        {
            Assert.That(() => ((IServiceCollection)null!).AddTcpEchoServer(), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("services"));
            Assert.That(() => services.AddTcpEchoServer((Action<TcpEchoServerOptions>)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("configure"));
            Assert.That(() => services.AddUdpEchoServer((IConfiguration)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("configuration"));
        });
    }

    private static async Task AssertUdpEchoesAsync(IPEndPoint server, CancellationToken cancellationToken)
    {
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        byte[] message = [1, 2, 3, 4, 5, 6, 7, 8];
        await client.SendToAsync(message, SocketFlags.None, server, cancellationToken);
        byte[] echo = new byte[16];
        int received = await UdpEchoTesting.ReceiveWithinAsync(client, echo, cancellationToken);

        Assert.That(echo[..received], Is.EqualTo(message));
    }
}
