using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using SocketServers;

namespace PoolLib.Tests.SocketServers;

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
        using var meter = new EchoMeterReader(server.LocalEndPoint!.Port);
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
        await using var server = new TcpEchoServer(options)
        {
            BeforeSweep = () =>
            {
                if (Interlocked.Exchange(ref armed, 0) == 1)
                {
                    throw new InvalidOperationException("injected sweep fault");
                }
            },
        };
        await server.StartAsync(cancellationToken);
        using var meter = new EchoMeterReader(server.LocalEndPoint!.Port);
        using Socket idle = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        Volatile.Write(ref armed, 1);

        Assert.That(await SocketTestExtensions.WithinAsync(idle.ReadEndAsync, "the idle connection is closed", cancellationToken), Is.Zero);
        Assert.That(Volatile.Read(ref armed), Is.Zero, "the sweep met the fault");
        AssertOneErrorMetered(meter, "sweep", typeof(InvalidOperationException).FullName!);
        await AssertStillServesAsync(server, cancellationToken);
    }

    private static void AssertOneErrorMetered(EchoMeterReader meter, string operation, string errorType)
    {
        var errors = meter.Recorded("echo.errors");
        Assert.That(errors, Has.Count.EqualTo(1));
        Assert.That(errors[0].Tags["echo.operation"], Is.EqualTo(operation));
        Assert.That(errors[0].Tags["error.type"], Is.EqualTo(errorType));
        Assert.That(errors[0].Tags["network.transport"], Is.EqualTo("tcp"));
    }
}
