using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using PoolLib;
using PoolLib.Tests;

namespace SocketServers.Tests;

// What the pool does when the server is down, dies, comes back, stops answering or closes idle connections.
public sealed partial class TcpClientPoolTests
{
    // The pool's clock is a fake one, so that the back-off lasts until the test moves it on.
    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_ServerDown_FailsWithTheConnectErrorThenAtOnceDuringTheBackoff(CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        var endPoint = new IPEndPoint(IPAddress.Loopback, RedisServerProcess.FreePort());
        using var metrics = MeterReader.ForPool($"tcp-client@{endPoint}");
        using var pool = new TcpClientPool(endPoint, new PoolOptions { MaxCapacity = 2, TimeProvider = time });

        var first = await Assert.ThrowsAsync<SocketException>(async () => await pool.TakeSlotAsync(cancellationToken));
        var duringBackoff = await Assert.ThrowsAsync<SocketException>(async () => await pool.TakeSlotAsync(cancellationToken));
        long connectsDuringBackoff = metrics.Recorded("pool.objects.create_failures").Count;
        time.Advance(TimeSpan.FromSeconds(1));
        var afterBackoff = await Assert.ThrowsAsync<SocketException>(async () => await pool.TakeSlotAsync(cancellationToken));

        Assert.That(first!.SocketErrorCode, Is.EqualTo(SocketError.ConnectionRefused));
        Assert.That(duringBackoff, Is.SameAs(first), "the last connect's exception, without connecting again");
        Assert.That(connectsDuringBackoff, Is.EqualTo(1), "failed connects");
        Assert.That(afterBackoff, Is.Not.SameAs(first), "a new connect once the back-off is over");
        Assert.That(afterBackoff!.SocketErrorCode, Is.EqualTo(SocketError.ConnectionRefused));
        Assert.That(metrics.Recorded("pool.objects.create_failures").Select(failure => failure.Tags["reason"]), Is.EqualTo(new[] { "failed", "failed" }));
        Assert.That(pool.TotalCount, Is.Zero);
    }

    // The server is killed while one connection waits for a reply (BLPOP on a list nobody fills) and another is idle.
    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_ServerKilledMidCall_InFlightCallEndsAndNoTakeGetsADeadConnection(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var metrics = MeterReader.ForPool($"tcp-client@{redis.EndPoint}");
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 4 });
        PoolSlot<TcpClientConnection> waiting = await pool.TakeSlotAsync(cancellationToken);
        using (PoolSlot<TcpClientConnection> idle = await pool.TakeSlotAsync(cancellationToken))
        {
            Assert.That(await Resp.CallAsync(idle.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
        }

        await waiting.Object.SendAsync(Resp.Command("BLPOP", "never-filled", "0"), cancellationToken);
        ValueTask<int> inFlight = waiting.Object.ReceiveAsync(new byte[64], cancellationToken);
        await Poll.UntilAsync(async () => (await redis.CommandAsync(cancellationToken, "INFO", "clients")).Contains("blocked_clients:1", StringComparison.Ordinal), cancellationToken);
        await redis.KillAsync(cancellationToken);

        int received = await inFlight;
        var sendAfter = await Assert.ThrowsAsync<IOException>(async () => await waiting.Object.SendAsync(Resp.Command("PING"), cancellationToken));
        bool broken = waiting.Object.IsBroken;
        waiting.Dispose();
        var take = await Assert.ThrowsAsync<SocketException>(async () => await pool.TakeSlotAsync(cancellationToken));

        Assert.That(received, Is.Zero, "the end of the server's stream");
        Assert.That(broken, Is.True);
        Assert.That(sendAfter!.Message, Does.Contain("is broken").And.Contain(redis.EndPoint.ToString()));
        Assert.That(take!.SocketErrorCode, Is.EqualTo(SocketError.ConnectionRefused), "neither connection was handed out: a new connect was refused");
        Assert.That(pool.TotalCount, Is.Zero);
        Assert.That(metrics.Recorded("pool.objects.discarded").Select(discard => discard.Tags["reason"]), Is.EqualTo(new[] { "invalid", "invalid" }));
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task TakeSlotAsync_ServerRestartedOnTheSamePort_CallsSucceedAgain(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 2 });
        Assert.That(await PingAsync(pool, cancellationToken), Is.EqualTo("+PONG"));

        await redis.KillAsync(cancellationToken);
        var whileDown = await Assert.ThrowsAsync<SocketException>(async () => await PingAsync(pool, cancellationToken));
        await redis.RestartAsync(cancellationToken);
        string? reply = null;
        while (reply is null)
        {
            try
            {
                reply = await PingAsync(pool, cancellationToken);
            }
            catch (SocketException)
            {
                // Refused during the back-off after the failures: the pool connects again once it is over.
                await Task.Delay(10, cancellationToken);
            }
        }

        Assert.That(whileDown!.SocketErrorCode, Is.EqualTo(SocketError.ConnectionRefused));
        Assert.That(reply, Is.EqualTo("+PONG"), "the first take that got a connection got a live one");
        Assert.That(await PingAsync(pool, cancellationToken), Is.EqualTo("+PONG"));
    }

    // SIGSTOP: the kernel still takes the request, and nothing answers it.
    [Test]
    [CancelAfter(30_000)]
    public async Task ReceiveAsync_ServerStopsAnswering_CallWithATimeoutEndsCancelledAndItsConnectionIsNotReused(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 2 });
        TcpClientConnection stalled;
        using (PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken))
        {
            Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
            await redis.PauseAsync(cancellationToken);
            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            timeout.CancelAfter(TimeSpan.FromMilliseconds(100));

            Assert.That(async () => await Resp.CallAsync(slot.Object, timeout.Token, "PING"), Throws.InstanceOf<OperationCanceledException>());
            stalled = slot.Object;
        }

        await redis.ResumeAsync(cancellationToken);
        using (PoolSlot<TcpClientConnection> next = await pool.TakeSlotAsync(cancellationToken))
        {
            Assert.That(stalled.IsBroken, Is.True);
            Assert.That(next.Object, Is.Not.SameAs(stalled));
            Assert.That(await Resp.CallAsync(next.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_ServerClosedIdleConnections_EveryTakeGetsALiveOne(CancellationToken cancellationToken)
    {
        const int Connections = 3;
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var metrics = MeterReader.ForPool($"tcp-client@{redis.EndPoint}");
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = Connections });
        string[] before = await ClientIdsOfConnectionsAsync(pool, Connections, cancellationToken);

        Assert.That(await redis.CommandAsync(cancellationToken, "CONFIG", "SET", "timeout", "1"), Is.EqualTo("+OK"));
        await Poll.UntilAsync(async () => await redis.ClientCountAsync(cancellationToken) == 0, cancellationToken);
        Assert.That(await redis.CommandAsync(cancellationToken, "CONFIG", "SET", "timeout", "0"), Is.EqualTo("+OK"));
        string[] after = await ClientIdsOfConnectionsAsync(pool, Connections, cancellationToken);

        Assert.That(after, Has.Length.EqualTo(Connections).And.No.AnyOf(before), "every take got a new connection, and it answered");
        Assert.That(metrics.Recorded("pool.objects.discarded").Select(discard => discard.Tags["reason"]), Is.EqualTo(Enumerable.Repeat("invalid", Connections)));
        Assert.That(pool.TotalCount, Is.EqualTo(Connections));
    }

    private static async Task<string> PingAsync(TcpClientPool pool, CancellationToken cancellationToken)
    {
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        return await Resp.CallAsync(slot.Object, cancellationToken, "PING");
    }

    /// <summary>Takes <paramref name="count"/> connections at once, asks each for its id on the server, and releases them.</summary>
    private static async Task<string[]> ClientIdsOfConnectionsAsync(TcpClientPool pool, int count, CancellationToken cancellationToken)
    {
        var slots = new List<PoolSlot<TcpClientConnection>>();
        try
        {
            for (int i = 0; i < count; i++)
            {
                slots.Add(await pool.TakeSlotAsync(cancellationToken));
            }

            var ids = new string[count];
            for (int i = 0; i < count; i++)
            {
                ids[i] = await Resp.CallAsync(slots[i].Object, cancellationToken, "CLIENT", "ID");
            }

            return ids;
        }
        finally
        {
            slots.ForEach(slot => slot.Dispose());
        }
    }
}
