using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;

namespace SocketServers.Tests;

/// <summary>The behaviour every <see cref="UdpProcessing"/> must have, run once per processing.</summary>
[TestFixture(UdpProcessing.ReceiveThreads)]
[TestFixture(UdpProcessing.ReplyBlock)]
public sealed partial class UdpEchoServerTests(UdpProcessing processing)
{
    // <sys/socket.h> on Linux: SOL_SOCKET, SO_REUSEPORT.
    private const int SolSocket = 1;
    private const int SoReusePort = 15;

    [Test]
    public void Constructor_NullOptions_ThrowsArgumentNull()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => _ = new UdpEchoServer(null!));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
    }

    // A server with several receives shares its port among its own sockets, and still not with another server.
    [TestCase(1, 1)]
    [TestCase(4, 1)]
    [TestCase(1, 4)]
    [TestCase(4, 4)]
    [CancelAfter(10_000)]
    public async Task StartAsync_PortInUse_ThrowsIOExceptionSayingInUse(int firstReceives, int secondReceives, CancellationToken cancellationToken)
    {
        await using var first = await StartAsync(options => options.ConcurrentReceives = firstReceives, cancellationToken);
        await using var second = new UdpEchoServer(new UdpEchoServerOptions
        {
            Port = first.LocalEndPoint!.Port,
            Processing = processing,
            ConcurrentReceives = secondReceives,
        });

        var exception = await Assert.ThrowsAsync<IOException>(() => second.StartAsync(cancellationToken));

        Assert.That(exception!.Message, Does.Contain("already in use").And.Contain("UDP"));
        Assert.That(exception.InnerException, Is.InstanceOf<SocketException>()
            .With.Property(nameof(SocketException.SocketErrorCode)).EqualTo(SocketError.AddressAlreadyInUse));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_Twice_ThrowsInvalidOperation(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);

        await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync(cancellationToken));
        Assert.That(server.LocalEndPoint!.Port, Is.Not.Zero);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_DefaultReceives_OnePerProcessorButOneWithinTheBounds(CancellationToken cancellationToken)
    {
        // One per processor but one; the reply block makes one receive per socket, and with no reuse-port one socket.
        int expected = processing == UdpProcessing.ReplyBlock
            ? 1
            : Math.Clamp(Environment.ProcessorCount - 1, 1, UdpEchoServerOptions.MaxAutomaticConcurrentReceives);

        await using var server = await StartAsync(cancellationToken: cancellationToken);

        Assert.That(server.ConcurrentReceives, Is.EqualTo(expected));
    }

    // Sockets that share a port (SO_REUSEPORT) let any later socket of the same user that asks for it join them, and
    // take a share of the datagrams; so without ReusePort every receive waits on the one socket.
    [TestCase(1, false, 1)]
    [TestCase(4, false, 1)]
    [TestCase(1, true, 1)]
    [TestCase(4, true, 4)]
    [CancelAfter(10_000)]
    public async Task StartAsync_SeveralReceives_BindsOneSocketUnlessReusePort(int receives, bool reusePort, int sockets, CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "reuse-port is Linux only, and /proc/net/udp lists the sockets");

        await using var server = await StartAsync(
            options =>
            {
                options.ConcurrentReceives = receives;
                options.ReusePort = reusePort;
            },
            cancellationToken);

        Assert.That(UdpSocketsBoundTo(server.LocalEndPoint!.Port), Is.EqualTo(sockets), "as the kernel lists them");
        Assert.That(server.SocketCount, Is.EqualTo(sockets));
        await UdpEchoTesting.AssertEchoesAsync(server.LocalEndPoint!, senders: 8, each: 10, cancellationToken);
    }

    // A burst waits in the socket's kernel buffer while the receives are busy; the system's default may be too small.
    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_ReceiveBufferSize_EverySocketGetsAtLeastThatMuch(CancellationToken cancellationToken)
    {
        const int Asked = 256 * 1024;
        var logger = new Microsoft.Extensions.Logging.Testing.FakeLogger();
        await using var server = new UdpEchoServer(
            new UdpEchoServerOptions { Address = IPAddress.Loopback, Port = 0, Processing = processing, ReceiveBufferSize = Asked }, logger);

        await server.StartAsync(cancellationToken);

        var started = logger.Collector.GetSnapshot().Single(record => record.Message.StartsWith("UDP echo server listening on", StringComparison.Ordinal));
        Assert.That(int.Parse(started.GetStructuredStateValue("ReceiveBufferSize")!, System.Globalization.CultureInfo.InvariantCulture), Is.GreaterThanOrEqualTo(Asked), started.Message);
        await UdpEchoTesting.AssertEchoesAsync(server.LocalEndPoint!, senders: 1, each: 3, cancellationToken);
    }

    // A plain socket with SO_REUSEPORT took 39 of 200 datagrams from a server with four receives that shared their port.
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(10_000)]
    public async Task StartAsync_SeveralReceivesWithoutReusePort_NoOtherSocketCanJoinThePort(int receives, CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "SO_REUSEPORT as Linux has it");
        await using var server = await StartAsync(options => options.ConcurrentReceives = receives, cancellationToken);
        using var intruder = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        intruder.SetRawSocketOption(SolSocket, SoReusePort, BitConverter.GetBytes(1));

        var exception = Assert.Throws<SocketException>(() => intruder.Bind(server.LocalEndPoint!));

        Assert.That(exception!.SocketErrorCode, Is.EqualTo(SocketError.AddressAlreadyInUse));
    }

    /// <summary>How many IPv4 UDP sockets the kernel lists as bound to <paramref name="port"/> (Linux's /proc/net/udp).</summary>
    private static int UdpSocketsBoundTo(int port)
    {
        // Each line after the header: "sl local_address rem_address ...", the local address as HEXADDR:HEXPORT.
        string local = $":{port:X4}";
        return File.ReadLines("/proc/net/udp").Skip(1)
            .Count(line => line.Split(' ', StringSplitOptions.RemoveEmptyEntries) is [_, string address, ..] && address.EndsWith(local, StringComparison.Ordinal));
    }

    private Task<UdpEchoServer> StartAsync(Action<UdpEchoServerOptions>? configure = null, CancellationToken cancellationToken = default)
        => UdpEchoTesting.StartAsync(processing, configure, cancellationToken);

    /// <summary>Stops <paramref name="server"/> within the test's time limit, for a test whose point is that the stop
    /// returns by itself.</summary>
    /// <remarks>Not <c>StopAsync(cancellationToken)</c>, which would close the socket on cancellation and so end what
    /// the test waits for itself; and the caller does not dispose the server when this does not return, since that
    /// would wait for the same stop.</remarks>
    private static Task StopWithoutCancellingAsync(UdpEchoServer server, CancellationToken cancellationToken)
        => server.StopAsync().WaitAsync(cancellationToken);
}
