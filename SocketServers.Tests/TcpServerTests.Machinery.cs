using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using PoolLib.Tests;
using Samples;

namespace SocketServers.Tests;

// What the echo server had and every protocol now gets: limits, timeouts, metrics, logging, options and hosting.
public sealed partial class TcpServerTests
{
    [Test]
    [CancelAfter(10_000)]
    public async Task MaxConnections_ClientBeyondTheCap_WaitsUntilOneCloses(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new UppercaseHandler(), options => options.MaxConnections = 1, cancellationToken);
        LineClient first = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await first.SendAsync("a\n", cancellationToken);
        Assert.That(await first.ReadLineAsync(cancellationToken), Is.EqualTo("1: A"));
        using LineClient second = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await second.SendAsync("b\n", cancellationToken);

        int openWhileFull = server.Counters.CurrentConnections;
        first.Dispose();

        Assert.That(openWhileFull, Is.EqualTo(1));
        Assert.That(await second.ReadLineAsync(cancellationToken), Is.EqualTo("1: B"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task RejectWhenFull_ClientBeyondTheCap_ClosedAtOnce(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new UppercaseHandler(), options => (options.MaxConnections, options.RejectWhenFull) = (1, true), cancellationToken);
        using LineClient first = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await first.SendAsync("a\n", cancellationToken);
        await first.ReadLineAsync(cancellationToken);

        using LineClient second = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.Rejected == 1, cancellationToken);

        Assert.That(await second.ReadToEndAsync(cancellationToken), Is.Empty);
        Assert.That(server.Counters.CurrentConnections, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task MaxConnectionsPerAddress_SecondFromOneAddress_Rejected(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new UppercaseHandler(), options => options.MaxConnectionsPerAddress = 1, cancellationToken);
        using LineClient first = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await first.SendAsync("a\n", cancellationToken);
        await first.ReadLineAsync(cancellationToken);

        using LineClient second = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        Assert.That(await second.ReadToEndAsync(cancellationToken), Is.Empty);
        Assert.That(server.Counters.Rejected, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task IdleTimeout_SilentConnection_Closed(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new UppercaseHandler(), options => options.IdleTimeout = TimeSpan.FromMilliseconds(200), cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        string rest = await client.ReadToEndAsync(cancellationToken);

        // The drop is counted after the open count falls (see Handler_MessageLongerThanMaxMessageSize_ConnectionCloses).
        await Poll.UntilAsync(() => server.Counters is { CurrentConnections: 0, Drops: 1 }, cancellationToken);
        Assert.That(rest, Is.Empty);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task MinDataRate_SilentClientHoldsTheOnlySlot_EvictedForAWaitingClient(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(
            new UppercaseHandler(),
            options => (options.MaxConnections, options.SlowConnectionWindow) = (1, TimeSpan.FromSeconds(1)),
            cancellationToken);
        using LineClient silent = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await silent.SendAsync("a\n", cancellationToken);
        await silent.ReadLineAsync(cancellationToken);
        using LineClient waiting = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await waiting.SendAsync("b\n", cancellationToken);

        Assert.That(await waiting.ReadLineAsync(cancellationToken), Is.EqualTo("1: B"), "served once the silent client was evicted");
        Assert.That(await silent.ReadToEndAsync(cancellationToken), Is.Empty);
        Assert.That(server.Counters.Evicted, Is.EqualTo(1));
    }

    // With RejectWhenFull a client the backlog holds is accepted only to be closed: evicting a connection for it frees a
    // place nobody takes. The sweep counted such clients as waiting and evicted the quiet holder.
    [Test]
    [CancelAfter(60_000)]
    public async Task RejectWhenFull_ClientsKeepComing_QuietConnectionNeverEvicted(CancellationToken cancellationToken)
    {
        const int Clients = 2_000;
        await using var server = await StartAsync(
            new UppercaseHandler(),
            options => (options.MaxConnections, options.RejectWhenFull, options.SlowConnectionWindow) = (1, true, TimeSpan.FromMilliseconds(40)),
            cancellationToken);
        using LineClient quiet = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await quiet.SendAsync("a\n", cancellationToken);
        await quiet.ReadLineAsync(cancellationToken);

        for (int i = 0; i < Clients; i++)
        {
            using var rejected = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            await rejected.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        }

        // Each client is rejected, or served in a place an eviction freed.
        await Poll.UntilAsync(() => server.Counters is var counters && counters.Rejected + counters.TotalConnections - 1 == Clients, cancellationToken);

        Assert.That(server.Counters.Evicted, Is.Zero);
        await quiet.SendAsync("b\n", cancellationToken);
        Assert.That(await quiet.ReadLineAsync(cancellationToken), Is.EqualTo("2: B"), "the quiet connection was kept");
    }

    // A logging provider that throws while the accept loop rejects a client is an exception the loop does not expect.
    [Test]
    [CancelAfter(30_000)]
    public async Task AcceptLoop_FailsUnexpectedly_StartsAgainAndServes(CancellationToken cancellationToken)
    {
        var logger = new ThrowOnceLogger("TCP client");
        await using var server = await StartAsync(new UppercaseHandler(), options => (options.MaxConnections, options.RejectWhenFull) = (1, true), cancellationToken, logger);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using (LineClient held = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await held.SendAsync("a\n", cancellationToken);
            await held.ReadLineAsync(cancellationToken);
            using LineClient over = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

            Assert.That(await over.ReadToEndAsync(cancellationToken), Is.Empty, "the client over the cap is closed");
        }

        // Accepted once the loop has started again; till then it waits in the backlog.
        using LineClient next = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await next.SendAsync("b\n", cancellationToken);

        Assert.That(await next.ReadLineAsync(cancellationToken), Is.EqualTo("1: B"), "a new client is served");
        var errors = meter.Recorded("socketservers.errors");
        Assert.That(errors.Select(error => (error.Tags["socketservers.operation"], error.Tags["error.type"])), Is.EqualTo(new[] { ((object?)"accept", (object?)typeof(InvalidOperationException).FullName) }));
        Assert.That(logger.Records.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Error).Select(record => record.Message), Has.Exactly(1).StartsWith($"TCP accept loop on {server.LocalEndPoint} failed; it starts again in 100 ms"));
    }

    // The README's handler: an object per line (24 bytes at the very least) would be far above the bound.
    [Test]
    [Category(TcpAllocationMeter.Category)]
    [CancelAfter(60_000)]
    public async Task Handler_SteadyStream_AllocatesNoObjectPerMessage(CancellationToken cancellationToken)
    {
        TcpAllocationMeter.AssumeOptimizedBuild();
        const double MaxBytesPerLine = 8;
        const int Lines = 8;
        byte[] batch = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("steady\n", Lines)));

        double bytesPerLine = await ServerBytesPerRequestAsync(new UppercaseHandler(), null, batch, (Lines, Lines), MaxBytesPerLine, cancellationToken);

        Assert.That(bytesPerLine, Is.LessThan(MaxBytesPerLine), $"the server allocated {bytesPerLine:F2} B per line");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Metrics_Connections_ReportedForAnyProtocol(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new UppercaseHandler(), cancellationToken: cancellationToken);
        using var listener = new MeterListener();
        var observed = new ConcurrentDictionary<string, long>();
        listener.InstrumentPublished = (instrument, meterListener) =>
        {
            if (instrument.Meter.Name == "SocketServers")
            {
                meterListener.EnableMeasurementEvents(instrument);
            }
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) =>
        {
            foreach (KeyValuePair<string, object?> tag in tags)
            {
                if (tag.Key == "server.port" && Equals(tag.Value, server.LocalEndPoint!.Port))
                {
                    observed[instrument.Name] = value;
                }
            }
        });
        listener.Start();
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("metered\n", cancellationToken);
        await client.ReadLineAsync(cancellationToken);
        await Poll.UntilAsync(() => server.Counters.BytesSent > 0, cancellationToken);

        listener.RecordObservableInstruments();

        Assert.That(observed["socketservers.active_connections"], Is.EqualTo(1));
        Assert.That(observed["socketservers.messages"], Is.EqualTo(1));
        Assert.That(observed["socketservers.sent_bytes"], Is.EqualTo("1: METERED\n".Length));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Logger_Connection_OpenAndCloseLoggedAtDebug(CancellationToken cancellationToken)
    {
        var logger = new RecordingLogger();
        await using var server = await StartAsync(new UppercaseHandler(), cancellationToken: cancellationToken, logger: logger);
        using (LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await client.SendAsync("quit\n", cancellationToken);
            await client.ReadToEndAsync(cancellationToken);
        }

        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);

        Assert.That(logger.Lines.Where(line => line.Level == LogLevel.Debug).Select(line => line.Message), Has.Some.Contains("opened").And.Some.Contains("closed"));
    }

    // A server of another protocol must not call itself an echo server: its lifecycle lines name its handler.
    [Test]
    [CancelAfter(10_000)]
    public async Task StartAndStopAsync_HandlerNotEcho_LifecycleLinesNameTheHandler(CancellationToken cancellationToken)
    {
        var logger = new RecordingLogger();
        await using var server = await StartAsync(new UppercaseHandler(), cancellationToken: cancellationToken, logger: logger);

        await server.StopAsync(cancellationToken);

        string[] information = [.. logger.Lines.Where(line => line.Level == LogLevel.Information).Select(line => line.Message)];
        Assert.That(information, Has.Some.StartsWith($"TCP server for UppercaseHandler listening on {server.LocalEndPoint} ("));
        Assert.That(information, Has.Some.StartsWith($"TCP server for UppercaseHandler on {server.LocalEndPoint} stopped: "));
        Assert.That(information, Has.None.Contains("echo"));
    }

    [Test]
    public void AddTcpServer_UnknownSetting_ThrowsOptionsValidationNamingIt()
    {
        IConfiguration configuration = new ConfigurationBuilder().AddInMemoryCollection([KeyValuePair.Create<string, string?>("Prot", "1")]).Build();
        using ServiceProvider services = new ServiceCollection().AddTcpServer<UppercaseHandler>(configuration).BuildServiceProvider();

        var exception = Assert.Throws<OptionsValidationException>(() => services.GetRequiredService<TcpServer<UppercaseHandler>>());

        Assert.That(exception!.Message, Does.Contain("'Prot'"));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task AddTcpServer_GenericHost_StartsServesAndStops(CancellationToken cancellationToken)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        builder.Services.AddTcpServer<UppercaseHandler>(options => (options.Address, options.Port) = (IPAddress.Loopback, 0));
        using IHost host = builder.Build();
        await host.StartAsync(cancellationToken);
        var server = host.Services.GetRequiredService<TcpServer<UppercaseHandler>>();
        using (LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await client.SendAsync("hosted\n", cancellationToken);
            Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("1: HOSTED"));
        }

        await host.StopAsync(cancellationToken);

        Assert.That(server.IsRunning, Is.False);
        Assert.That(server.Handler, Is.SameAs(host.Services.GetRequiredService<UppercaseHandler>()));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task ReusePort_TwoServersOnOnePort_BothServe(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), "reuse-port is for Linux");
        await using var first = await StartAsync(new UppercaseHandler(), options => options.ReusePort = true, cancellationToken);
        await using var second = await StartAsync(new UppercaseHandler(), options => (options.ReusePort, options.Port) = (true, first.LocalEndPoint!.Port), cancellationToken);

        using LineClient client = await LineClient.ConnectAsync(first.LocalEndPoint!, cancellationToken);
        await client.SendAsync("shared\n", cancellationToken);

        Assert.That(second.LocalEndPoint, Is.EqualTo(first.LocalEndPoint));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("1: SHARED"));
    }

    // The handler's close from another thread while the connection waits for data owing nothing, its client silent: the
    // linger's reset completed that wait, and the connection was logged as lost rather than as reset by the linger.
    [Test]
    [CancelAfter(20_000)]
    public async Task Close_FromAnotherThreadWhileTheConnectionWaits_LoggedAsTheLingersReset(CancellationToken cancellationToken)
    {
        var handler = new CapturingHandler();
        var logger = new RecordingLogger();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken, logger: logger);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("a\n", cancellationToken);
        TcpConnection connection = await handler.Seen.Task.WaitAsync(cancellationToken);
        await Poll.UntilAsync(() => server.BuffersInUse == 0, cancellationToken); // the loop waits for data, holding no buffer

        connection.Close();
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);

        string[] messages = [.. logger.Lines.Select(line => line.Message)];
        Assert.That(messages, Has.Some.Contains("not by the client within the linger"));
        Assert.That(messages, Has.None.Contains(" lost: "));
    }

    /// <summary>Consumes every line and hands its connection over.</summary>
    private sealed class CapturingHandler : TcpConnectionHandler
    {
        public TaskCompletionSource<TcpConnection> Seen { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public override ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            Seen.TrySetResult(connection);
            return ValueTask.FromResult(data.Length);
        }
    }

    /// <summary>Keeps every line logged, formatted.</summary>
    private sealed class RecordingLogger : ILogger
    {
        public ConcurrentQueue<(LogLevel Level, string Message)> Lines { get; } = new();

        public ConcurrentQueue<(LogLevel Level, Exception? Exception)> Exceptions { get; } = new();

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            Lines.Enqueue((logLevel, formatter(state, exception)));
            Exceptions.Enqueue((logLevel, exception));
        }
    }
}
