using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using PoolLib.Tests;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// Unexpected exceptions in the server's own loops: each is logged and counted, and the loop starts again.
public sealed partial class TcpEchoServerTests
{
    // A logging provider that throws while the accept loop rejects a client is an exception the loop does not expect.
    [Test]
    [CancelAfter(30_000)]
    public async Task AcceptLoop_FailsUnexpectedlyWhileRejecting_StartsAgainAndServes(CancellationToken cancellationToken)
    {
        var logger = new ThrowOnceLogger("TCP client");
        TcpEchoServerOptions options = LoopbackOptions();
        options.MaxConnections = 1;
        options.RejectWhenFull = true;
        await using var server = new TcpEchoServer(options, logger);
        await server.StartAsync(cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using (Socket held = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken))
        {
            await held.AssertEchoOnAsync(cancellationToken);
            using Socket over = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

            Assert.That(await SocketTestExtensions.WithinAsync(over.ReadEndAsync, "the client over the cap is closed", cancellationToken), Is.Zero);
        }

        await SocketTestExtensions.WithinAsync(token => SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint!, 10, token), "a new client is served", cancellationToken);

        Assert.That(server.Counters.Rejected, Is.EqualTo(1));
        AssertOneErrorMetered(meter, "accept", typeof(InvalidOperationException).FullName!);
        FakeLogRecord[] logged = [.. logger.Records.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Error)];
        Assert.That(logged, Has.Length.EqualTo(1));
        Assert.That(logged[0].Message, Does.StartWith($"TCP accept loop on {server.LocalEndPoint} failed; it starts again in 100 ms"));
    }

    // The sweep's first read of the clock throws: the sweep is logged, metered and started again, and a later sweep
    // still closes the idle connection.
    [Test]
    [CancelAfter(30_000)]
    public async Task IdleSweep_FailsUnexpectedlyOnce_StartsAgainAndClosesIdleConnections(CancellationToken cancellationToken)
    {
        TimeSpan idleTimeout = TimeSpan.FromMilliseconds(200);
        TcpEchoServerOptions options = LoopbackOptions();
        options.IdleTimeout = idleTimeout;
        var time = new FaultyTimeProvider();
        await using var server = await Started.StartAsync(new TcpEchoServer(options, logger: null, time), cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        await Poll.UntilAsync(() => time.TimersCreated == 1, cancellationToken);
        using Socket idle = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        // Once the connection is set up (which read the clock), a silent one never reads it: the next read is the sweep's.
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 1, cancellationToken);
        time.FailNextRead();
        time.Advance(idleTimeout / 4);
        await SocketTestExtensions.WithinAsync(token => Poll.UntilAsync(() => time.TimersCreated == 2, token), "the sweep starts again", cancellationToken);
        time.Advance(idleTimeout);

        Assert.That(await SocketTestExtensions.WithinAsync(idle.ReadEndAsync, "the idle connection is closed", cancellationToken), Is.Zero);
        Assert.That(time.Failures, Is.EqualTo(1), "the sweep met the fault");
        Assert.That(server.LoopRestarts, Is.EqualTo(1));
        AssertOneErrorMetered(meter, "sweep", typeof(InvalidOperationException).FullName!);
        await AssertStillServesAsync(server, cancellationToken);
    }

    private static void AssertOneErrorMetered(MeterReader meter, string operation, string errorType)
    {
        var errors = meter.Recorded("socketservers.errors");
        Assert.That(errors, Has.Count.EqualTo(1));
        Assert.That(errors[0].Tags["socketservers.operation"], Is.EqualTo(operation));
        Assert.That(errors[0].Tags["error.type"], Is.EqualTo(errorType));
        Assert.That(errors[0].Tags["network.transport"], Is.EqualTo("tcp"));
    }
}
