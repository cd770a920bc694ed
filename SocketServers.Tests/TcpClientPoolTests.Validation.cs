using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Time.Testing;
using PoolLib;

namespace SocketServers.Tests;

// The health check on connections idle longer than ValidateAfterIdle, and what the pool logs.
public sealed partial class TcpClientPoolTests
{
    // The pool's clock is a fake one, so that connections are idle exactly as long as the test says.
    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_IdleLongerThanValidateAfterIdle_HealthCheckRunsAndOneThatFailsReplacesTheConnection(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        var time = new FakeTimeProvider();
        int checks = 0;
        bool healthy = true;
        var options = new TcpClientPoolOptions
        {
            EndPoint = redis.EndPoint,
            Pool = new PoolOptions { MaxCapacity = 2, ValidateAfterIdle = TimeSpan.FromSeconds(30), TimeProvider = time },
            HealthCheck = async (connection, token) =>
            {
                checks++;
                return await Resp.CallAsync(connection, token, "PING") == "+PONG" && healthy;
            },
        };
        using var pool = new TcpClientPool(options);
        TcpClientConnection first = await UseAsync(pool, cancellationToken);

        TcpClientConnection notIdleLong = await UseAsync(pool, cancellationToken);
        int checksBeforeIdle = checks;
        time.Advance(TimeSpan.FromSeconds(31));
        TcpClientConnection checkedAndHealthy = await UseAsync(pool, cancellationToken);
        healthy = false;
        time.Advance(TimeSpan.FromSeconds(31));
        TcpClientConnection replaced = await UseAsync(pool, cancellationToken);

        Assert.That(checksBeforeIdle, Is.Zero, "a connection idle for less than ValidateAfterIdle is not checked");
        Assert.That((notIdleLong, checkedAndHealthy), Is.EqualTo((first, first)));
        Assert.That(replaced, Is.Not.SameAs(first), "the connection that failed its check was closed");
        Assert.That(first.IsBroken, Is.True);
        Assert.That(checks, Is.EqualTo(2), "the new connection was idle for no time on the fake clock");
        Assert.That(pool.TotalCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_HealthCheckThrows_ConnectionReplacedAndAWarningLogged(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        var time = new FakeTimeProvider();
        var logger = new FakeLogger();
        var options = new TcpClientPoolOptions
        {
            EndPoint = redis.EndPoint,
            Pool = new PoolOptions { MaxCapacity = 1, ValidateAfterIdle = TimeSpan.FromSeconds(1), TimeProvider = time },
            HealthCheck = (_, _) => throw new InvalidOperationException("the check's own bug"),
        };
        using var pool = new TcpClientPool(options, logger);
        TcpClientConnection first = await UseAsync(pool, cancellationToken);

        time.Advance(TimeSpan.FromSeconds(2));
        TcpClientConnection second = await UseAsync(pool, cancellationToken);

        Assert.That(second, Is.Not.SameAs(first));
        FakeLogRecord warning = logger.Collector.GetSnapshot().Single(record => record.Level == LogLevel.Warning);
        Assert.That(warning.Message, Does.StartWith($"TCP client connection 1 to {redis.EndPoint}: the health check threw; discarding it"));
        Assert.That(warning.Exception, Is.InstanceOf<InvalidOperationException>());
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Logger_ConnectionsAndAFailedConnect_OpenAndCloseAtDebugFailuresAtWarning(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        var logger = new FakeLogger();
        var down = new IPEndPoint(IPAddress.Loopback, RedisServerProcess.FreePort());
        using (var pool = new TcpClientPool(new TcpClientPoolOptions { EndPoint = redis.EndPoint, Pool = new PoolOptions { MaxCapacity = 1 } }, logger))
        {
            await UseAsync(pool, cancellationToken);
        }

        using (var refused = new TcpClientPool(new TcpClientPoolOptions { EndPoint = down, Pool = new PoolOptions { MaxCapacity = 1 } }, logger))
        {
            Assert.That(async () => await refused.TakeSlotAsync(cancellationToken), Throws.InstanceOf<SocketException>());
        }

        var records = logger.Collector.GetSnapshot().Select(record => (record.Level, record.Message)).ToArray();
        Assert.That(records[0].Level, Is.EqualTo(LogLevel.Debug));
        Assert.That(records[0].Message, Does.StartWith($"TCP client connection 1 to {redis.EndPoint} opened from 127.0.0.1:"));
        Assert.That(records[1..], Is.EqualTo(new[]
        {
            (LogLevel.Debug, $"TCP client connection 1 to {redis.EndPoint} closed"),
            (LogLevel.Warning, $"TCP client connect to {down} failed"),
        }));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_EndPointByName_ConnectsToAnAddressItResolvesTo(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(new DnsEndPoint("localhost", redis.EndPoint.Port), new PoolOptions { MaxCapacity = 1 });
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);

        Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
        Assert.That(((IPEndPoint)slot.Object.RemoteEndPoint).Port, Is.EqualTo(redis.EndPoint.Port));
    }

    /// <summary>Takes a connection, makes one round trip on it, releases it, and returns it.</summary>
    private static async Task<TcpClientConnection> UseAsync(TcpClientPool pool, CancellationToken cancellationToken)
    {
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
        return slot.Object;
    }
}
