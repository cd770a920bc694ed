using System.Net.Sockets;
using System.Text;
using PoolLib;
using PoolLib.Tests;

namespace SocketServers.Tests;

// A pooled connection's sends and receives against a real redis-server, which each test starts and kills at its end.
public sealed class TcpClientConnectionTests
{
    private static readonly byte[] s_ping = Resp.Command("PING");

    [Test]
    [CancelAfter(60_000)]
    public async Task SendAsync_ValueLargerThanTheSocketBuffers_EveryByteArrivesAndComesBack(CancellationToken cancellationToken)
    {
        const int Size = 1 << 20;
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        var options = new TcpClientPoolOptions { EndPoint = redis.EndPoint, Pool = new PoolOptions { MaxCapacity = 1 }, SendBufferSize = 4096, ReceiveBufferSize = 4096 };
        using var pool = new TcpClientPool(options);
        string value = string.Concat(Enumerable.Range(0, Size / 8).Select(i => (i % 10_000_000).ToString("D8", System.Globalization.CultureInfo.InvariantCulture)));
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);

        string stored = await Resp.CallAsync(slot.Object, cancellationToken, "SET", "big", value);
        await slot.Object.SendAsync(Resp.Command("GET", "big"), cancellationToken);
        byte[] reply = new byte[Size + 64];
        int length = 0;
        string expected = $"${Size}\r\n{value}\r\n";
        while (length < expected.Length)
        {
            int read = await slot.Object.ReceiveAsync(reply.AsMemory(length, Math.Min(1000, reply.Length - length)), cancellationToken);
            Assert.That(read, Is.Positive, "the server ended its stream");
            length += read;
        }

        Assert.That(stored, Is.EqualTo("+OK"));
        Assert.That(Encoding.ASCII.GetString(reply, 0, length), Is.EqualTo(expected));
        Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"), "the connection goes on");
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task ReceiveAsync_CancelledInFlight_ThrowsWithTheTokenAndClosesTheConnection(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 2 });
        PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        TcpClientConnection cancelled = slot.Object;
        using var cancel = new CancellationTokenSource();

        await cancelled.SendAsync(Resp.Command("BLPOP", "never-filled", "0"), cancellationToken);
        ValueTask<int> receiving = cancelled.ReceiveAsync(new byte[64], cancel.Token);
        await cancel.CancelAsync();
        var exception = await Assert.ThrowsAsync<OperationCanceledException>(async () => await receiving);
        await Poll.UntilAsync(async () => await redis.ClientCountAsync(cancellationToken) == 0, cancellationToken);
        slot.Dispose();
        using PoolSlot<TcpClientConnection> next = await pool.TakeSlotAsync(cancellationToken);

        Assert.That(exception!.CancellationToken, Is.EqualTo(cancel.Token));
        Assert.That(cancelled.IsBroken, Is.True);
        Assert.That(next.Object, Is.Not.SameAs(cancelled), "the cancelled connection is not handed out again");
        Assert.That(await Resp.CallAsync(next.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task ReceiveAsync_TokenCancelledBeforeTheCall_ThrowsAndTheConnectionStaysUsable(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 1 });
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);

        Assert.That(async () => await slot.Object.ReceiveAsync(new byte[64], new CancellationToken(canceled: true)), Throws.InstanceOf<OperationCanceledException>());
        Assert.That(async () => await slot.Object.SendAsync(s_ping, new CancellationToken(canceled: true)), Throws.InstanceOf<OperationCanceledException>());

        Assert.That(slot.Object.IsBroken, Is.False);
        Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task ReceiveAsync_SecondReceiveWhileOneIsInFlight_ThrowsWhileASendGoesThrough(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 1 });
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        byte[] reply = new byte[64];

        ValueTask<int> first = slot.Object.ReceiveAsync(reply, cancellationToken);
        Assert.That(() => slot.Object.ReceiveAsync(new byte[64], cancellationToken), Throws.InvalidOperationException);
        await slot.Object.SendAsync(s_ping, cancellationToken);
        int received = await first;

        Assert.That(Encoding.ASCII.GetString(reply, 0, received), Is.EqualTo("+PONG\r\n"));
        Assert.That(slot.Object.IsBroken, Is.False);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Dispose_WhileAReceiveIsInFlight_ItEndsDisposedAndTheNextTakeConnectsAgain(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 1 });
        PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        TcpClientConnection disposed = slot.Object;

        ValueTask<int> receiving = disposed.ReceiveAsync(new byte[64], cancellationToken);
        disposed.Dispose();
        var inFlight = await Assert.ThrowsAsync<ObjectDisposedException>(async () => await receiving);
        var after = await Assert.ThrowsAsync<ObjectDisposedException>(async () => await disposed.SendAsync(s_ping, cancellationToken));
        slot.Dispose();
        using PoolSlot<TcpClientConnection> next = await pool.TakeSlotAsync(cancellationToken);

        Assert.That(inFlight!.ObjectName, Does.Contain(redis.EndPoint.ToString()));
        Assert.That(after, Is.Not.Null);
        Assert.That(next.Object, Is.Not.SameAs(disposed));
        Assert.That(await Resp.CallAsync(next.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
    }

    // A peer of the test's own that resets the connection (SO_LINGER 0), which redis-server never does.
    [Test]
    [CancelAfter(30_000)]
    public async Task ReceiveAsync_PeerResetsInFlight_ThrowsIOExceptionNamingThePeerAndLogsAWarning(CancellationToken cancellationToken)
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new System.Net.IPEndPoint(System.Net.IPAddress.Loopback, 0));
        listener.Listen();
        var logger = new Microsoft.Extensions.Logging.Testing.FakeLogger();
        var options = new TcpClientPoolOptions { EndPoint = listener.LocalEndPoint, Pool = new PoolOptions { MaxCapacity = 1 } };
        using var pool = new TcpClientPool(options, logger);
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        using Socket peer = await listener.AcceptAsync(cancellationToken);

        ValueTask<int> receiving = slot.Object.ReceiveAsync(new byte[64], cancellationToken);
        peer.LingerState = new LingerOption(true, 0);
        peer.Close();
        var failure = await Assert.ThrowsAsync<IOException>(async () => await receiving);
        var next = await Assert.ThrowsAsync<IOException>(async () => await slot.Object.SendAsync(s_ping, cancellationToken));

        Assert.That(failure!.Message, Is.EqualTo($"Receiving from {listener.LocalEndPoint} failed: ConnectionReset."));
        Assert.That(failure.InnerException, Is.InstanceOf<SocketException>().With.Property("SocketErrorCode").EqualTo(SocketError.ConnectionReset));
        Assert.That(next!.InnerException, Is.SameAs(failure), "a later call names the failure that broke the connection");
        Assert.That(slot.Object.IsBroken, Is.True);
        var warning = logger.Collector.GetSnapshot().Single(record => record.Level == Microsoft.Extensions.Logging.LogLevel.Warning);
        Assert.That(warning.Message, Is.EqualTo($"TCP client connection 1 to {listener.LocalEndPoint} failed"));
        Assert.That(warning.Exception, Is.SameAs(failure));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Socket_DefaultOptions_NoDelayAndKeepAliveSet(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 1 });
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
        Socket socket = slot.Object.Socket;

        Assert.That(socket.NoDelay, Is.True);
        Assert.That(socket.GetSocketOption(SocketOptionLevel.Socket, SocketOptionName.KeepAlive), Is.Not.Zero);
        if (OperatingSystem.IsLinux())
        {
            Assert.That(socket.GetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveTime), Is.EqualTo(60));
            Assert.That(socket.GetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveInterval), Is.EqualTo(10));
            Assert.That(socket.GetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveRetryCount), Is.EqualTo(3));
        }

        Assert.That(slot.Object.RemoteEndPoint, Is.EqualTo(redis.EndPoint));
        Assert.That(slot.Object.LocalEndPoint, Is.EqualTo(socket.LocalEndPoint));
        Assert.That(slot.Object.Id, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Socket_KeepAliveTimeNull_NoKeepAlive(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(new TcpClientPoolOptions { EndPoint = redis.EndPoint, Pool = new PoolOptions { MaxCapacity = 1 }, KeepAliveTime = null });
        using PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);

        Assert.That(slot.Object.Socket.GetSocketOption(SocketOptionLevel.Socket, SocketOptionName.KeepAlive), Is.Zero);
    }

    // A take, a PING and its reply, a release: an object per round trip (24 bytes at the very least) would be far above
    // the bound. The whole process is counted, the runtime's own work included, in rounds (see TcpAllocationMeter), on the
    // thread pool: the test's synchronization context would post each continuation, allocating for it.
    [Test]
    [Category(TcpAllocationMeter.Category)]
    [CancelAfter(120_000)]
    public async Task SendAsyncReceiveAsync_SteadyRoundTrips_AllocateNothing(CancellationToken cancellationToken)
    {
        TcpAllocationMeter.AssumeOptimizedBuild();
        const double MaxBytesPerRoundTrip = 8;
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        using var pool = new TcpClientPool(redis.EndPoint, new PoolOptions { MaxCapacity = 1 });

        double bytesPerRoundTrip = await Task.Run(() => BytesPerRoundTripAsync(pool, MaxBytesPerRoundTrip, cancellationToken), cancellationToken);

        await TestContext.Out.WriteLineAsync($"allocated {bytesPerRoundTrip:F3} B per round trip");
        Assert.That(bytesPerRoundTrip, Is.LessThan(MaxBytesPerRoundTrip), $"the process allocated {bytesPerRoundTrip:F2} B per round trip");
        Assert.That(pool.TotalCount, Is.EqualTo(1));
    }

    /// <returns>The bytes the process allocated per round trip in the first round under <paramref name="goal"/>, else the
    /// lowest of <see cref="TcpAllocationMeter.MaxRounds"/>.</returns>
    private static async Task<double> BytesPerRoundTripAsync(TcpClientPool pool, double goal, CancellationToken cancellationToken)
    {
        const int RoundTrips = 2_000;
        byte[] reply = new byte[64];
        double lowest = double.MaxValue;
        for (int round = 0; round < TcpAllocationMeter.MaxRounds && lowest >= goal; round++)
        {
            long before = GC.GetTotalAllocatedBytes(precise: true);
            for (int i = 0; i < RoundTrips; i++)
            {
                PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken).ConfigureAwait(false);
                await slot.Object.SendAsync(s_ping, cancellationToken).ConfigureAwait(false);
                for (int received = 0; received < "+PONG\r\n".Length;)
                {
                    int read = await slot.Object.ReceiveAsync(reply.AsMemory(received), cancellationToken).ConfigureAwait(false);
                    received += read > 0 ? read : throw new EndOfStreamException("the server ended its stream");
                }

                pool.Release(slot);
            }

            lowest = Math.Min(lowest, (double)(GC.GetTotalAllocatedBytes(precise: true) - before) / RoundTrips);
        }

        return lowest;
    }
}
