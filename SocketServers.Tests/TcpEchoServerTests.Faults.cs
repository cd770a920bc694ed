using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using PoolLib.Tests;
using SocketServers.Internal;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// Unexpected exceptions in the server's own loops: each is logged and counted, and the loop starts again.
public sealed partial class TcpEchoServerTests
{
    // At the cap with RejectWhenFull, the server accepts a waiting client only to close it. If that accept fails (out of
    // file descriptors, say), the client stays in the backlog, the listener stays readable, and an accept retried at once
    // fails at once, for ever: the server must pause before it retries, as it does below the cap.
    [Test]
    [CancelAfter(30_000)]
    public async Task RejectWhenFull_AcceptFailsAtTheCap_RetriesAfterAPauseWithoutSpinning(CancellationToken cancellationToken)
    {
        // A loop that spins keeps a core busy in every one of four half-second windows.
        TimeSpan window = TimeSpan.FromMilliseconds(500);
        const int Windows = 4;
        int failing = 0;
        int failedAccepts = 0;
        TcpEchoServerOptions options = LoopbackOptions();
        options.MaxConnections = 1;
        options.RejectWhenFull = true;
        options.MinDataRate = 0; // the held client stays, however long the waiting one waits
        var faults = new FaultInjection
        {
            BeforeAccept = () =>
            {
                if (Volatile.Read(ref failing) == 0)
                {
                    return SocketError.Success;
                }

                Interlocked.Increment(ref failedAccepts);
                return SocketError.TooManyOpenSockets;
            },
        };
        await using var server = new TcpEchoServer(options, logger: null, faults);
        await server.StartAsync(cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket held = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await held.AssertEchoOnAsync(cancellationToken);
        await ProcessCpu.WaitUntilQuietAsync(cancellationToken);

        // The accept already under way takes this client and rejects it; every accept after it fails.
        Volatile.Write(ref failing, 1);
        using Socket over = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        Assert.That(await over.ReadEndAsync(cancellationToken), Is.Zero);
        using Socket waiting = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => Volatile.Read(ref failedAccepts) > 0, cancellationToken);

        double[] cores = await ProcessCpu.CoresUsedPerWindowAsync(window, Windows, cancellationToken);

        Assert.That(cores.Min(), Is.LessThan(0.3), $"the process kept {string.Join(", ", cores.Select(used => used.ToString("F2")))} cores busy in windows of {window.TotalSeconds} s with an accept that keeps failing");
        Volatile.Write(ref failing, 0);
        Assert.That(await waiting.ReadEndAsync(cancellationToken), Is.Zero, "once accepts work again, the waiting client is rejected");
        Assert.That(server.Counters.Rejected, Is.EqualTo(2));
        var errors = meter.Recorded("socketservers.errors");
        Assert.That(errors, Is.Not.Empty);
        Assert.That(errors.Select(error => error.Tags["socketservers.operation"]), Is.All.EqualTo("accept"));
        Assert.That(errors.Select(error => error.Tags["error.type"]), Is.All.EqualTo(nameof(SocketError.TooManyOpenSockets)));
    }

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

    [Test]
    [CancelAfter(30_000)]
    public async Task IdleSweep_FailsUnexpectedlyOnce_StartsAgainAndClosesIdleConnections(CancellationToken cancellationToken)
    {
        TcpEchoServerOptions options = LoopbackOptions();
        options.IdleTimeout = TimeSpan.FromMilliseconds(200);
        int armed = 0;
        var faults = new FaultInjection
        {
            BeforeSweep = () =>
            {
                if (Interlocked.Exchange(ref armed, 0) == 1)
                {
                    throw new InvalidOperationException("injected sweep fault");
                }
            },
        };
        await using var server = new TcpEchoServer(options, logger: null, faults);
        await server.StartAsync(cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket idle = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        Volatile.Write(ref armed, 1);

        Assert.That(await SocketTestExtensions.WithinAsync(idle.ReadEndAsync, "the idle connection is closed", cancellationToken), Is.Zero);
        Assert.That(Volatile.Read(ref armed), Is.Zero, "the sweep met the fault");
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
