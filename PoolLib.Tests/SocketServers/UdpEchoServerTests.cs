using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using SocketServers;

namespace PoolLib.Tests.SocketServers;

public sealed class UdpEchoServerTests
{
    private static readonly TimeSpan s_echoTimeout = TimeSpan.FromSeconds(5);

    [Test]
    public void Constructor_NullOptions_ThrowsArgumentNull()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => _ = new UdpEchoServer(null!));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_PortInUse_ThrowsIOExceptionSayingInUse(CancellationToken cancellationToken)
    {
        await using var first = await StartAsync(cancellationToken: cancellationToken);
        await using var second = new UdpEchoServer(new UdpEchoServerOptions { Port = first.LocalEndPoint!.Port });

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
    [CancelAfter(60_000)]
    public async Task Echo_EightSendersThousandsOfDatagrams_EchoesByteExact(CancellationToken cancellationToken)
    {
        const int Senders = 8;
        const int PerSender = 2500;
        // A bounded window per sender keeps what is in flight (8 x 4 datagrams of at most 1400 B) far below
        // the default socket buffers, so loopback has no reason to drop anything: every datagram must come back.
        const int Window = 4;
        await using var server = await StartAsync(cancellationToken: cancellationToken);

        async Task<int> RunSenderAsync(int seed)
        {
            var random = new Random(seed);
            using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
            client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            var outstanding = new Dictionary<int, byte[]>();
            byte[] receiveBuffer = new byte[2048];
            int next = 0;
            int mismatches = 0;
            while (next < PerSender || outstanding.Count > 0)
            {
                while (next < PerSender && outstanding.Count < Window)
                {
                    byte[] datagram = new byte[random.Next(4, 1401)];
                    random.NextBytes(datagram);
                    BinaryPrimitives.WriteInt32LittleEndian(datagram, next);
                    outstanding.Add(next++, datagram);
                    await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
                }

                int received = await ReceiveWithinAsync(client, receiveBuffer, cancellationToken);
                int sequence = BinaryPrimitives.ReadInt32LittleEndian(receiveBuffer);
                if (!outstanding.Remove(sequence, out byte[]? sent) || !receiveBuffer.AsSpan(0, received).SequenceEqual(sent))
                {
                    mismatches++;
                }
            }

            return mismatches;
        }

        int[] mismatches = await Task.WhenAll(Enumerable.Range(0, Senders).Select(seed => Task.Run(() => RunSenderAsync(seed), cancellationToken)));
        await WaitForIdleAsync(server, cancellationToken);

        Assert.That(mismatches, Is.All.Zero);
        EchoServerCounters counters = server.Counters;
        Assert.That(counters.MessagesEchoed, Is.EqualTo(Senders * PerSender));
        Assert.That(counters.Drops, Is.Zero);
        Assert.That(counters.PoolTotalCount, Is.LessThanOrEqualTo(new UdpEchoServerOptions().MaxPendingDatagrams + new UdpEchoServerOptions().ConcurrentReceives));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Echo_OversizedDatagram_DroppedThenNormalOnesEchoed(CancellationToken cancellationToken)
    {
        const int MaxSize = 1024;
        await using var server = await StartAsync(options => options.MaxDatagramSize = MaxSize, cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        byte[] oversized = Enumerable.Repeat((byte)0xEE, MaxSize + 1).ToArray();
        byte[] largest = Enumerable.Repeat((byte)0x11, MaxSize).ToArray();
        byte[] small = [1, 2, 3];

        await client.SendToAsync(oversized, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.Drops == 1, cancellationToken);
        await client.SendToAsync(largest, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await client.SendToAsync(small, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        var echoes = new List<byte[]>();
        byte[] buffer = new byte[4096];
        for (int i = 0; i < 2; i++)
        {
            int received = await ReceiveWithinAsync(client, buffer, cancellationToken);
            echoes.Add(buffer[..received]);
        }

        Assert.That(echoes, Is.EquivalentTo(new[] { largest, small }), "only the datagrams that fit come back, whole");
        await WaitForIdleAsync(server, cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        Assert.That(server.Counters.MessagesEchoed, Is.EqualTo(2));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Echo_ReplyToClosedPort_LaterTrafficStillEchoed(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);
        using (var gone = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp))
        {
            // Connected to another peer, this socket does not take the server's reply: the kernel answers it with
            // ICMP port unreachable, exactly as for a closed port, with no race against the reply.
            gone.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            gone.Connect(new IPEndPoint(IPAddress.Loopback, 9));
            for (int i = 0; i < 10; i++)
            {
                await gone.SendToAsync(new byte[] { 7, 7, (byte)i }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            }

            await Poll.UntilAsync(() => server.Counters.MessagesEchoed + server.Counters.Drops == 10, cancellationToken);
        }

        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        byte[] buffer = new byte[64];
        for (int i = 0; i < 10; i++)
        {
            byte[] datagram = [42, (byte)i];
            await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            int received = await ReceiveWithinAsync(client, buffer, cancellationToken);
            Assert.That(buffer[..received], Is.EqualTo(datagram));
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task StopAsync_TrafficInFlight_CompletesWithAllSlotsBack(CancellationToken cancellationToken)
    {
        var server = await StartAsync(options => options.StopGracePeriod = TimeSpan.FromSeconds(2), cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        try
        {
            byte[] datagram = new byte[512];
            for (int i = 0; i < 500; i++)
            {
                await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            }

            await Poll.UntilAsync(() => server.Counters.MessagesEchoed > 0, cancellationToken);
            await server.StopAsync(cancellationToken);

            EchoServerCounters counters = server.Counters;
            Assert.That(counters.PoolAvailableCount, Is.EqualTo(counters.PoolTotalCount), "every args back in the pool");
            Assert.That(server.IsRunning, Is.False);
            Assert.That(server.StopAsync(cancellationToken).IsCompletedSuccessfully, Is.True, "a second stop is harmless");
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    private static async Task<UdpEchoServer> StartAsync(Action<UdpEchoServerOptions>? configure = null, CancellationToken cancellationToken = default)
    {
        var options = new UdpEchoServerOptions { Address = IPAddress.Loopback, Port = 0 };
        configure?.Invoke(options);
        var server = new UdpEchoServer(options);
        await server.StartAsync(cancellationToken);
        return server;
    }

    /// <summary>Receives one datagram; a lost one fails the test with a message instead of hanging it.</summary>
    private static async Task<int> ReceiveWithinAsync(Socket client, byte[] buffer, CancellationToken cancellationToken)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(s_echoTimeout);
        try
        {
            return await client.ReceiveAsync(buffer, SocketFlags.None, timeout.Token);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            Assert.Fail($"no echo within {s_echoTimeout}");
            throw;
        }
    }

    /// <summary>Waits until every args but those of the outstanding receives is back in the pool.</summary>
    private static Task WaitForIdleAsync(UdpEchoServer server, CancellationToken cancellationToken)
    {
        int receives = new UdpEchoServerOptions().ConcurrentReceives;
        return Poll.UntilAsync(() => server.Counters is var c && c.PoolAvailableCount == c.PoolTotalCount - receives, cancellationToken);
    }
}
