using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>Faults that must not stop the server: a receive loop that throws, datagrams from privileged ports.</summary>
public sealed partial class UdpEchoServerTests
{
    // The largest datagram the fault tests' servers take, and the start of the warning about one larger.
    private const int MaxSize = 64;
    private const string TooLargeLine = "UDP datagram from";

    // A logging provider that throws on the warning about a datagram too large is an exception the receive loop does
    // not expect, met in the loop itself.
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(30_000)]
    public async Task ReceiveLoop_FirstReceivesThrow_EachFaultLoggedAndEveryReceiveRestarted(int receives, CancellationToken cancellationToken)
    {
        const int Faults = 3;
        const int Datagrams = 10;
        var logger = new ThrowOnceLogger(TooLargeLine, times: Faults);
        var server = new UdpEchoServer(Options(options => { options.ConcurrentReceives = receives; options.MaxDatagramSize = MaxSize; }), logger);
        await using (server)
        {
            await server.StartAsync(cancellationToken);
            using Socket client = SocketTestExtensions.BoundUdpClient();

            // With one receive, each echo needs the loop that failed three times; with four, the idle pool below
            // needs all four loops back in their receives.
            await SendTooLargeAsync(server, client, Faults, cancellationToken);
            await Poll.UntilAsync(() => server.LoopRestarts == Faults, cancellationToken);
            await EchoEachAsync(server, client, Datagrams, cancellationToken);
            await UdpEchoTesting.WaitForIdleAsync(server, Datagrams + Faults, cancellationToken);

            Assert.That(server.LoopRestarts, Is.EqualTo(Faults));
            Assert.That(server.Counters.MessagesHandled, Is.EqualTo(Datagrams));
            Assert.That(server.Counters.Drops, Is.EqualTo(Faults), "the datagrams too large");
        }

        FakeLogRecord[] errors = [.. logger.Records.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Error)];
        Assert.That(errors, Has.Length.EqualTo(Faults), "one line per fault, within the limiter's lines");
        Assert.That(errors.Select(record => record.Message), Has.All.Contain("UDP receive loop on").And.Contain("it starts again in 100 ms"));
        Assert.That(errors.Select(record => record.Exception), Has.All.InstanceOf<InvalidOperationException>());
    }

    // A logging provider that throws is one way a reply can fail unexpectedly. That datagram's echo may be lost, but
    // the server must go on answering: with ReplyBlock, an exception out of the block's action would fault the block,
    // and every later datagram would be declined while the server says it runs.
    [Test]
    [CancelAfter(30_000)]
    public async Task Echo_ReplyFailsUnexpectedlyOnce_LaterDatagramsStillEchoed(CancellationToken cancellationToken)
    {
        var logger = new ThrowOnceLogger("UDP echoed");
        await using var server = new UdpEchoServer(Options(_ => { }), logger);
        await server.StartAsync(cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await EchoEachAsync(server, client, datagrams: 3, cancellationToken);

        Assert.That(server.IsRunning, Is.True);
        var errors = meter.Recorded("socketservers.errors");
        Assert.That(errors, Has.Count.EqualTo(1));
        Assert.That(errors[0].Tags["error.type"], Is.EqualTo(typeof(InvalidOperationException).FullName));
        FakeLogRecord[] logged = [.. logger.Records.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Error)];
        Assert.That(logged.Select(record => record.Exception), Has.Exactly(1).InstanceOf<InvalidOperationException>());
    }

    // With a pause of for ever and a grace period of a day, a stop that waited for the pause, or for a receive that
    // will never be made, would not return, and the test would hit its own time limit instead of passing. Every loop
    // fails once: three at most, as many as the warnings about datagrams too large let through in a second.
    [TestCase(1)]
    [TestCase(3)]
    [CancelAfter(30_000)]
    public async Task StopAsync_ReceiveLoopsPausedAfterFaults_ReturnsWithEverySlotBackAndNoRestart(int receives, CancellationToken cancellationToken)
    {
        var logger = new ThrowOnceLogger(TooLargeLine, times: receives);
        UdpEchoServerOptions options = Options(options =>
        {
            options.ConcurrentReceives = receives;
            options.MaxDatagramSize = MaxSize;
            options.StopGracePeriod = TimeSpan.FromDays(1);
        });
        var server = new UdpEchoServer(options, logger) { RestartDelay = Timeout.InfiniteTimeSpan };
        try
        {
            await server.StartAsync(cancellationToken);
            using Socket client = SocketTestExtensions.BoundUdpClient();
            await SendTooLargeAsync(server, client, server.ConcurrentReceives, cancellationToken);
            await Poll.UntilAsync(() => LoopFailures(logger) == server.ConcurrentReceives, cancellationToken);
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }

        await StopWithoutCancellingAsync(server, cancellationToken);

        Assert.That(server.Counters.PoolAvailableCount, Is.EqualTo(server.Counters.PoolTotalCount), "every args back in the pool");
        Assert.That(server.LoopRestarts, Is.Zero, "no loop started again");
        Assert.That(LoopFailures(logger), Is.EqualTo(server.ConcurrentReceives));
        await server.DisposeAsync();
    }

    // Ports below 1024 need privileges to bind, so the server's threshold is moved up between two ephemeral ports
    // this test owns: the lower one is dropped exactly as a privileged port is, the higher one still echoed.
    [Test]
    [CancelAfter(20_000)]
    public async Task Echo_SourcePortBelowTheFirstAnswered_DroppedCountedMeteredAndLogged(CancellationToken cancellationToken)
    {
        var logger = new FakeLogger();
        using Socket first = SocketTestExtensions.BoundUdpClient();
        using Socket second = SocketTestExtensions.BoundUdpClient();
        (Socket low, Socket high) = PortOf(first) < PortOf(second) ? (first, second) : (second, first);
        await using (var server = new UdpEchoServer(Options(options => options.FirstAnsweredPort = PortOf(high)), logger))
        {
            await server.StartAsync(cancellationToken);
            using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
            await low.SendToAsync(new byte[] { 1, 2, 3 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            await Poll.UntilAsync(() => server.Counters.Drops == 1, cancellationToken);
            await EchoEachAsync(server, high, datagrams: 1, cancellationToken);
            await UdpEchoTesting.WaitForIdleAsync(server, datagrams: 2, cancellationToken);

            Assert.That(server.Counters.Drops, Is.EqualTo(1));
            Assert.That(server.Counters.MessagesHandled, Is.EqualTo(1), "only the datagram from the higher port");
            AssertOneDropMetered(meter, "privileged_port");
        }

        string[] warnings = [.. logger.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Warning).Select(record => record.Message)];
        Assert.That(warnings, Has.Length.EqualTo(1));
        Assert.That(warnings[0], Does.Contain($"UDP datagram from 127.0.0.1:{PortOf(low)} dropped").And.Contain($"source ports below {PortOf(high)}"));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Echo_PrivilegedSourcePortsAllowed_SourceBelowTheFirstAnsweredEchoed(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(
            options =>
            {
                options.AllowPrivilegedSourcePorts = true;
                options.FirstAnsweredPort = IPEndPoint.MaxPort + 1;
            },
            cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await EchoEachAsync(server, client, datagrams: 3, cancellationToken);
        await UdpEchoTesting.WaitForIdleAsync(server, datagrams: 3, cancellationToken);

        Assert.That(server.Counters.MessagesHandled, Is.EqualTo(3));
        Assert.That(server.Counters.Drops, Is.Zero);
    }

    // The same with a real port below 1024, where this process may bind one (as root, or where the system lowers the
    // privileged range); elsewhere the test is inconclusive and the two tests above stand for it.
    [TestCase(false)]
    [TestCase(true)]
    [CancelAfter(20_000)]
    public async Task Echo_SourcePortBelow1024_EchoedOnlyWhenAllowed(bool allow, CancellationToken cancellationToken)
    {
        using Socket client = BindPortBelow1024OrInconclusive();
        await using var server = await StartAsync(options => options.AllowPrivilegedSourcePorts = allow, cancellationToken);

        if (allow)
        {
            await EchoEachAsync(server, client, datagrams: 1, cancellationToken);
        }
        else
        {
            await client.SendToAsync(new byte[] { 4, 5, 6 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        }

        await UdpEchoTesting.WaitForIdleAsync(server, datagrams: 1, cancellationToken);
        Assert.That(server.Counters.MessagesHandled, Is.EqualTo(allow ? 1 : 0));
        Assert.That(server.Counters.Drops, Is.EqualTo(allow ? 0 : 1));
    }

    private UdpEchoServerOptions Options(Action<UdpEchoServerOptions> configure)
    {
        var options = new UdpEchoServerOptions { Address = IPAddress.Loopback, Port = 0, Processing = processing };
        configure(options);
        return options;
    }

    private static void AssertOneDropMetered(MeterReader meter, string reason)
    {
        var dropped = meter.Recorded("socketservers.dropped_datagrams");
        Assert.That(dropped, Has.Count.EqualTo(1));
        Assert.That(dropped[0].Value, Is.EqualTo(1));
        Assert.That(dropped[0].Tags["reason"], Is.EqualTo(reason));
        Assert.That(dropped[0].Tags["network.transport"], Is.EqualTo("udp"));
    }

    /// <summary>Sends <paramref name="datagrams"/> datagrams larger than <see cref="MaxSize"/>, each dropped.</summary>
    private static async Task SendTooLargeAsync(UdpEchoServer server, Socket client, int datagrams, CancellationToken cancellationToken)
    {
        for (int i = 0; i < datagrams; i++)
        {
            await client.SendToAsync(new byte[2 * MaxSize], SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        }
    }

    private static int LoopFailures(ThrowOnceLogger logger)
        => logger.Records.Collector.GetSnapshot().Count(record => record.Level == LogLevel.Error && record.Message.Contains("UDP receive loop on", StringComparison.Ordinal));

    private static int PortOf(Socket socket) => ((IPEndPoint)socket.LocalEndPoint!).Port;

    /// <summary>A client on 127.0.0.1 at the highest free port below 1024; the test is inconclusive where binding
    /// one is not allowed.</summary>
    private static Socket BindPortBelow1024OrInconclusive()
    {
        var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        try
        {
            for (int port = UdpEchoServerOptions.FirstUnprivilegedPort - 1; port >= 512; port--)
            {
                try
                {
                    client.Bind(new IPEndPoint(IPAddress.Loopback, port));
                    return client;
                }
                catch (SocketException ex) when (ex.SocketErrorCode == SocketError.AddressAlreadyInUse)
                {
                    // A service has it: try the next port down.
                }
                catch (SocketException ex)
                {
                    Assume.That(ex.SocketErrorCode, Is.Not.EqualTo(SocketError.AccessDenied), "binding a port below 1024 needs privileges this process does not have");
                    throw;
                }
            }

            Assert.Inconclusive("every port from 512 to 1023 is in use");
            return client;
        }
        catch
        {
            client.Dispose();
            throw;
        }
    }

    /// <summary>Sends <paramref name="datagrams"/> datagrams one at a time, each echoed byte-exact before the next.</summary>
    private static async Task EchoEachAsync(UdpEchoServer server, Socket client, int datagrams, CancellationToken cancellationToken)
    {
        byte[] buffer = new byte[64];
        for (int i = 0; i < datagrams; i++)
        {
            byte[] datagram = [42, (byte)i];
            await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            int received = await UdpEchoTesting.ReceiveWithinAsync(client, buffer, cancellationToken);
            Assert.That(buffer[..received], Is.EqualTo(datagram));
        }
    }
}
