using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;

namespace SocketServers.Tests;

/// <summary>What only <see cref="UdpProcessing.ReplyBlock"/> has: a bounded queue of datagrams waiting for their reply.</summary>
public sealed class UdpEchoServerReplyBlockTests
{
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(60_000)]
    public async Task Echo_OnePendingDatagram_EchoesEveryDatagramOfAWindow(int receives, CancellationToken cancellationToken)
    {
        // With room for one datagram, the one being replied to fills the reply block: every datagram that comes in
        // meanwhile is refused by Post and waits for room (SendAsync) instead of being queued. Every one of them
        // must still be answered, exactly once, with nothing dropped.
        const int Datagrams = 2_000;
        const int Window = 8;
        await using var server = await UdpEchoTesting.StartAsync(
            UdpProcessing.ReplyBlock,
            options =>
            {
                options.MaxPendingDatagrams = 1;
                options.ConcurrentReceives = receives;
            },
            cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        byte[] receiveBuffer = new byte[64];
        var outstanding = new HashSet<int>();
        int next = 0;
        int mismatches = 0;

        while (next < Datagrams || outstanding.Count > 0)
        {
            while (next < Datagrams && outstanding.Count < Window)
            {
                byte[] datagram = new byte[8];
                BinaryPrimitives.WriteInt32LittleEndian(datagram, next);
                BinaryPrimitives.WriteInt32LittleEndian(datagram.AsSpan(4), ~next);
                outstanding.Add(next++);
                await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            }

            int received = await UdpEchoTesting.ReceiveWithinAsync(client, receiveBuffer, cancellationToken);
            int sequence = BinaryPrimitives.ReadInt32LittleEndian(receiveBuffer);
            if (received != 8 || BinaryPrimitives.ReadInt32LittleEndian(receiveBuffer.AsSpan(4)) != ~sequence || !outstanding.Remove(sequence))
            {
                mismatches++;
            }
        }

        await UdpEchoTesting.WaitForIdleAsync(server, Datagrams, cancellationToken);
        Assert.That(mismatches, Is.Zero);
        Assert.That(server.Counters.MessagesHandled, Is.EqualTo(Datagrams));
        Assert.That(server.Counters.Drops, Is.Zero);
    }
}
