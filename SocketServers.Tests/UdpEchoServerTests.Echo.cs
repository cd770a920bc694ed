using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>Echoes in every processing: in order, byte-exact under load, to IPv6 senders, dropping oversized datagrams, through ICMP errors, allocating nothing per datagram.</summary>
public sealed partial class UdpEchoServerTests
{
    // With reuse-port, each sender's datagrams go to one socket, received and answered by one receive at a time: however
    // many receives the server has, a sender gets its echoes back in the order it sent them.
    [Test]
    [CancelAfter(30_000)]
    public async Task Echo_OneSenderSeveralReceivesWithReusePort_EchoesComeBackInOrder(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "reuse-port is Linux only; on one socket two receives may answer one sender's datagrams out of order");

        const int Datagrams = 5_000;
        const int Window = 16;
        await using var server = await StartAsync(
            options =>
            {
                options.ConcurrentReceives = 4;
                options.ReusePort = true;
            },
            cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Connect(server.LocalEndPoint!);
        byte[] datagram = new byte[8];
        byte[] echo = new byte[64];
        int sent = 0;
        var order = new List<int>(Datagrams);
        while (order.Count < Datagrams)
        {
            while (sent < Datagrams && sent - order.Count < Window)
            {
                BinaryPrimitives.WriteInt32LittleEndian(datagram, sent++);
                await client.SendAsync(datagram, SocketFlags.None, cancellationToken);
            }

            int received = await UdpEchoTesting.ReceiveWithinAsync(client, echo, cancellationToken);
            order.Add(received == datagram.Length ? BinaryPrimitives.ReadInt32LittleEndian(echo) : -1);
        }

        Assert.That(order, Is.EqualTo(Enumerable.Range(0, Datagrams)));
    }

    // A stress test, longer than the others: eight senders and their windows are set up, run and checked in one
    // place, so that what is asserted at the end is visibly what was sent.
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(60_000)]
    public async Task Echo_EightSendersThousandsOfDatagrams_EchoesByteExact(int receives, CancellationToken cancellationToken)
    {
        const int Senders = 8;
        const int PerSender = 2500;
        // A bounded window per sender keeps what is in flight (8 x 4 datagrams of at most 1400 B) far below
        // the default socket buffers, so loopback has no reason to drop anything: every datagram must come back.
        const int Window = 4;
        await using var server = await StartAsync(options => options.ConcurrentReceives = receives, cancellationToken);

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

                int received = await UdpEchoTesting.ReceiveWithinAsync(client, receiveBuffer, cancellationToken);
                int sequence = BinaryPrimitives.ReadInt32LittleEndian(receiveBuffer);
                if (!outstanding.Remove(sequence, out byte[]? sent) || !receiveBuffer.AsSpan(0, received).SequenceEqual(sent))
                {
                    mismatches++;
                }
            }

            return mismatches;
        }

        int[] mismatches = await Task.WhenAll(Enumerable.Range(0, Senders).Select(seed => Task.Run(() => RunSenderAsync(seed), cancellationToken)));
        await UdpEchoTesting.WaitForIdleAsync(server, Senders * PerSender, cancellationToken);

        Assert.That(mismatches, Is.All.Zero);
        SocketServerCounters counters = server.Counters;
        Assert.That(counters.MessagesHandled, Is.EqualTo(Senders * PerSender));
        Assert.That(counters.Drops, Is.Zero);
        if (processing == UdpProcessing.ReplyBlock)
        {
            // Memory follows what is in flight, not the pool's cap (256 + receives): an args per receive and per datagram
            // not yet answered (at most the senders' windows), with room for the few the pool keeps per thread.
            int inFlight = receives + (Senders * Window);
            Assert.That(counters.PoolTotalCount, Is.LessThanOrEqualTo(2 * inFlight));
        }
        else
        {
            Assert.That(counters.PoolTotalCount, Is.EqualTo(receives), "each receive thread holds one args");
        }
    }

    // One byte over the limit still fits the receive buffer (which has a spare byte to tell); the
    // larger ones do not, and arrive truncated: neither kind may be echoed.
    [TestCase(1)]
    [TestCase(1_000)]
    [TestCase(60_000)]
    [CancelAfter(20_000)]
    public async Task Echo_OversizedDatagram_DroppedThenNormalOnesEchoed(int bytesOverLimit, CancellationToken cancellationToken)
    {
        const int MaxSize = 1024;
        await using var server = await StartAsync(options => options.MaxDatagramSize = MaxSize, cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        byte[] oversized = Enumerable.Repeat((byte)0xEE, MaxSize + bytesOverLimit).ToArray();
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
            int received = await UdpEchoTesting.ReceiveWithinAsync(client, buffer, cancellationToken);
            echoes.Add(buffer[..received]);
        }

        Assert.That(echoes, Is.EquivalentTo(new[] { largest, small }), "only the datagrams that fit come back, whole");
        await UdpEchoTesting.WaitForIdleAsync(server, datagrams: 3, cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        Assert.That(server.Counters.MessagesHandled, Is.EqualTo(2));
        AssertOneDropMetered(meter, "too_large");
    }

    // RFC 862 echoes every datagram, an empty one too; on a wildcard address through the receive and send that know
    // the address it was sent to. One receive, so that the echoes come back in order.
    [TestCase("127.0.0.1")]
    [TestCase("0.0.0.0")]
    [CancelAfter(20_000)]
    public async Task Echo_EmptyDatagram_EchoedAsAnEmptyDatagram(string address, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(
            options =>
            {
                options.Address = IPAddress.Parse(address);
                options.ConcurrentReceives = 1;
            },
            cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Connect(new IPEndPoint(IPAddress.Loopback, server.LocalEndPoint!.Port));
        byte[] echo = new byte[16];

        await client.SendAsync(Array.Empty<byte>(), SocketFlags.None, cancellationToken);
        await client.SendAsync(new byte[] { 1 }, SocketFlags.None, cancellationToken);
        int first = await UdpEchoTesting.ReceiveWithinAsync(client, echo, cancellationToken);
        Assert.That(first, Is.Zero, "the empty datagram's echo comes first");
        int second = await UdpEchoTesting.ReceiveWithinAsync(client, echo, cancellationToken);

        Assert.That(echo[..second], Is.EqualTo(new byte[] { 1 }));
        await UdpEchoTesting.WaitForIdleAsync(server, datagrams: 2, cancellationToken);
        Assert.That((server.Counters.MessagesHandled, server.Counters.Drops), Is.EqualTo((2, 0)));
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

            await Poll.UntilAsync(() => server.Counters.MessagesHandled + server.Counters.Drops == 10, cancellationToken);
        }

        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        byte[] buffer = new byte[64];
        for (int i = 0; i < 10; i++)
        {
            byte[] datagram = [42, (byte)i];
            await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            int received = await UdpEchoTesting.ReceiveWithinAsync(client, buffer, cancellationToken);
            Assert.That(buffer[..received], Is.EqualTo(datagram));
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Echo_IPv6Senders_EachEchoGoesBackToItsSender(CancellationToken cancellationToken)
    {
        if (!Socket.OSSupportsIPv6)
        {
            Assert.Ignore("IPv6 is not available on this machine.");
        }

        const int Senders = 4;
        const int PerSender = 500;
        await using var server = await StartAsync(options => options.Address = IPAddress.IPv6Loopback, cancellationToken);

        async Task<int> RunSenderAsync(int sender)
        {
            using var client = new Socket(AddressFamily.InterNetworkV6, SocketType.Dgram, ProtocolType.Udp);
            client.Bind(new IPEndPoint(IPAddress.IPv6Loopback, 0));
            byte[] datagram = new byte[8];
            byte[] receiveBuffer = new byte[64];
            int mismatches = 0;
            for (int i = 0; i < PerSender; i++)
            {
                BinaryPrimitives.WriteInt32LittleEndian(datagram, sender);
                BinaryPrimitives.WriteInt32LittleEndian(datagram.AsSpan(4), i);
                await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
                int received = await UdpEchoTesting.ReceiveWithinAsync(client, receiveBuffer, cancellationToken);
                if (!receiveBuffer.AsSpan(0, received).SequenceEqual(datagram))
                {
                    mismatches++;
                }
            }

            return mismatches;
        }

        int[] mismatches = await Task.WhenAll(Enumerable.Range(0, Senders).Select(sender => Task.Run(() => RunSenderAsync(sender), cancellationToken)));
        await UdpEchoTesting.WaitForIdleAsync(server, Senders * PerSender, cancellationToken);

        Assert.That(mismatches, Is.All.Zero, "every sender gets exactly its own datagrams back");
        Assert.That(server.Counters.MessagesHandled, Is.EqualTo(Senders * PerSender));
        Assert.That(server.LocalEndPoint!.AddressFamily, Is.EqualTo(AddressFamily.InterNetworkV6));
    }

    // A client connected to the address it sends to, as nc -u and most resolvers are, reads only datagrams from that
    // address: a server on a wildcard address must answer from the address each datagram was sent to, here 127.0.0.2
    // where its routes would pick 127.0.0.1.
    [TestCase("0.0.0.0", 1)]
    [TestCase("0.0.0.0", 4)]
    [TestCase("::", 1)]
    [CancelAfter(10_000)]
    public async Task Echo_WildcardAddressDatagramToAnotherLoopbackAddress_ReplyComesFromThatAddress(string wildcard, int receives, CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "Linux answers 127.0.0.2 on its loopback, and lets a reply leave from a chosen address");
        await using var server = await StartAsync(
            options =>
            {
                options.Address = IPAddress.Parse(wildcard);
                options.ConcurrentReceives = receives;
            },
            cancellationToken);
        var other = new IPEndPoint(IPAddress.Parse("127.0.0.2"), server.LocalEndPoint!.Port);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        client.Connect(other);
        byte[] echo = new byte[64];

        for (byte i = 0; i < 10; i++)
        {
            byte[] datagram = [i, 2, 3, 4, 5];
            await client.SendAsync(datagram, SocketFlags.None, cancellationToken);
            int received = await UdpEchoTesting.ReceiveWithinAsync(client, echo, cancellationToken);

            Assert.That(echo[..received], Is.EqualTo(datagram));
        }

        await UdpEchoTesting.AssertEchoesAsync(new IPEndPoint(IPAddress.Loopback, other.Port), senders: 2, each: 5, cancellationToken);
    }

    // A stress test, longer than the others: warm-up, measured stream and the allocation sums stay in one method, so
    // that nothing allocated between them escapes the measurement.
    // With a reply limit, every datagram is also counted against its sender: that allocates nothing either. Nor does
    // learning, on a wildcard address, the address each datagram was sent to (.NET's own receive that reports it
    // allocated 220 B a datagram).
    [TestCase(1, 0, "127.0.0.1")]
    [TestCase(4, 0, "127.0.0.1")]
    [TestCase(1, int.MaxValue, "127.0.0.1")]
    [TestCase(1, 0, "0.0.0.0")]
    [CancelAfter(60_000)]
    public async Task Echo_SteadyStream_AllocatesNoObjectPerDatagram(int receives, int replyLimit, string address, CancellationToken cancellationToken)
    {
        // A blocking client on this thread allocates nothing per datagram and counts what it does allocate, so the
        // process-wide growth minus the client's is the server's, plus what the runtime and the test host do
        // meanwhile (a few hundred KB at most: the socket layer's own operation objects, the test host's messages).
        // An object per datagram (24 bytes at the very least; the reply Task was 64, the sender's endpoint 72)
        // would be far above the bound; the benchmark measures the exact figure over longer runs.
        const int Warmup = 5_000;
        const int Measured = 50_000;
        const int Window = 4;
        const double MaxBytesPerDatagram = 8;
        await using var server = await StartAsync(
            options =>
            {
                options.ConcurrentReceives = receives;
                options.MaxRepliesPerEndpointPerSecond = replyLimit;
                options.Address = IPAddress.Parse(address);
            },
            cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp) { ReceiveTimeout = (int)UdpEchoTesting.EchoTimeout.TotalMilliseconds };
        client.Connect(new IPEndPoint(IPAddress.Loopback, server.LocalEndPoint!.Port));
        byte[] datagram = new byte[32];
        byte[] echo = new byte[64];
        int shortEchoes = 0;

        void Exchange(int count)
        {
            for (int i = 0; i < Window; i++)
            {
                client.Send(datagram);
            }

            for (int i = 0; i < count; i++)
            {
                cancellationToken.ThrowIfCancellationRequested();
                if (client.Receive(echo) != datagram.Length)
                {
                    shortEchoes++;
                }

                if (i < count - Window)
                {
                    client.Send(datagram);
                }
            }
        }

        Exchange(Warmup);
        long clientBefore = GC.GetAllocatedBytesForCurrentThread();
        long before = GC.GetTotalAllocatedBytes(precise: true);
        Exchange(Measured);
        long after = GC.GetTotalAllocatedBytes(precise: true);
        long clientAllocated = GC.GetAllocatedBytesForCurrentThread() - clientBefore;
        double serverBytesPerDatagram = (double)(after - before - clientAllocated) / Measured;
        await UdpEchoTesting.WaitForIdleAsync(server, Warmup + Measured, cancellationToken);

        Assert.That(shortEchoes, Is.Zero);
        Assert.That(server.Counters.MessagesHandled, Is.EqualTo(Warmup + Measured));
        Assert.That(serverBytesPerDatagram, Is.LessThan(MaxBytesPerDatagram), $"the server allocated {serverBytesPerDatagram:F2} B per echoed datagram");
    }
}
