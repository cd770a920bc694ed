using System.Net;
using System.Net.Sockets;
using PoolLib;

namespace SocketServers.Tests;

// The pooled TCP client against a real redis-server, which each test starts on a port of its own and kills at its end.
public sealed partial class TcpClientPoolTests
{
    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_SequentialTakes_RoundTripOnOneReusedConnection(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 4 });
        var serverSideIds = new List<string>();

        for (int i = 0; i < 5; i++)
        {
            using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
            Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
            Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "SET", "greeting", $"hello {i}"), Is.EqualTo("+OK"));
            Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "GET", "greeting"), Is.EqualTo($"hello {i}"));
            serverSideIds.Add(await Resp.CallAsync(slot.Object, cancellationToken, "CLIENT", "ID"));
        }

        Assert.That(serverSideIds.Distinct().Count(), Is.EqualTo(1), "every take used the same server-side connection");
        Assert.That(pool.TotalCount, Is.EqualTo(1));
        Assert.That(await redis.ClientCountAsync(cancellationToken), Is.EqualTo(1), "connections the server holds");
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task TakeSlotAsync_ConcurrentTakers_EveryRequestAnsweredWithinTheCap(CancellationToken cancellationToken)
    {
        const int Takers = 8;
        const int RequestsEach = 200;
        const int Cap = 3;
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = Cap });
        var serverSideIds = new System.Collections.Concurrent.ConcurrentDictionary<string, byte>();

        await Task.WhenAll(Enumerable.Range(0, Takers).Select(_ => Task.Run(async () =>
        {
            for (int i = 0; i < RequestsEach; i++)
            {
                using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
                Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "INCR", "counter"), Does.StartWith(":"));
                serverSideIds.TryAdd(await Resp.CallAsync(slot.Object, cancellationToken, "CLIENT", "ID"), 0);
            }
        }, cancellationToken)));

        Assert.That(await redis.CommandAsync(cancellationToken, "GET", "counter"), Is.EqualTo($"{Takers * RequestsEach}"));
        Assert.That(serverSideIds, Has.Count.InRange(1, Cap), "server-side connections used");
        Assert.That(pool.TotalCount, Is.InRange(1, Cap));
        Assert.That(pool.AvailableCount, Is.EqualTo(pool.TotalCount), "every connection back idle");
    }

    [Test]
    public void Constructor_InvalidArguments_ThrowNamingThem()
    {
        var poolOptions = new PoolOptions { MaxCapacity = 1 };
        var endPoint = new IPEndPoint(IPAddress.Loopback, 6379);

        Assert.Multiple(() =>
        {
            Assert.That(() => new TcpClientPool(null!, poolOptions), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("endPoint"));
            Assert.That(() => new TcpClientPool(endPoint, null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("options"));
            Assert.That(() => new TcpClientPool(new UnixDomainSocketEndPoint("/tmp/redis.sock"), poolOptions), Throws.ArgumentException.With.Property("ParamName").EqualTo("endPoint"));
            Assert.That(() => new TcpClientPool(null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("options"));
            Assert.That(() => new TcpClientPool(new TcpClientPoolOptions { Pool = poolOptions }), Throws.ArgumentException.With.Property("ParamName").EqualTo("options.EndPoint"));
            Assert.That(() => new TcpClientPool(endPoint, new PoolOptions()), Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("options.MaxCapacity"));
        });
    }

    [Test]
    public void Name_NotGiven_NamedAfterTheEndPoint()
    {
        using var byAddress = new TcpClientPool(new IPEndPoint(IPAddress.IPv6Loopback, 6379), new PoolOptions { MaxCapacity = 1 });
        using var byName = new TcpClientPool(new DnsEndPoint("redis.internal", 6380), new PoolOptions { MaxCapacity = 1 });
        using var named = new TcpClientPool(new DnsEndPoint("redis.internal", 6380), new PoolOptions { MaxCapacity = 1, Name = "sessions" });

        Assert.That((byAddress.Name, byName.Name, named.Name), Is.EqualTo(("tcp-client@[::1]:6379", "tcp-client@redis.internal:6380", "sessions")));
    }
}
