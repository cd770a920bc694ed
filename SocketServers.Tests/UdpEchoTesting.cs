using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>What the UDP server tests share: starting a server, receiving an echo within a bound, waiting for idle.</summary>
internal static class UdpEchoTesting
{
    public static readonly TimeSpan EchoTimeout = TimeSpan.FromSeconds(5);

    /// <summary>Starts a server on 127.0.0.1, port 0, with <paramref name="processing"/> and what <paramref name="configure"/> sets;
    /// disposes it if the start fails.</summary>
    public static Task<UdpEchoServer> StartAsync(UdpProcessing processing, Action<UdpEchoServerOptions>? configure, CancellationToken cancellationToken)
    {
        var options = new UdpEchoServerOptions { Address = IPAddress.Loopback, Port = 0, Processing = processing };
        configure?.Invoke(options);
        return Started.StartAsync(new UdpEchoServer(options), cancellationToken);
    }

    /// <summary>Receives one datagram; a lost one fails the test with a message instead of hanging it.</summary>
    public static Task<int> ReceiveWithinAsync(Socket client, byte[] buffer, CancellationToken cancellationToken)
        => SocketTestExtensions.WithinAsync(token => client.ReceiveAsync(buffer, SocketFlags.None, token).AsTask(), "an echo", cancellationToken);

    /// <summary>Sends <paramref name="each"/> datagrams from each of <paramref name="senders"/> sockets and checks every echo.</summary>
    public static async Task AssertEchoesAsync(IPEndPoint server, int senders, int each, CancellationToken cancellationToken)
    {
        for (int s = 0; s < senders; s++)
        {
            using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
            client.Connect(server);
            for (int i = 0; i < each; i++)
            {
                byte[] datagram = [(byte)s, (byte)i, 1, 2, 3, 4, 5, 6];
                await client.SendAsync(datagram, SocketFlags.None, cancellationToken);
                byte[] echo = new byte[16];
                int received = await ReceiveWithinAsync(client, echo, cancellationToken);
                Assert.That(echo[..received], Is.EqualTo(datagram));
            }
        }
    }

    /// <summary>Waits until the server has counted <paramref name="datagrams"/> datagrams (echoed or dropped)
    /// and every args but those of its outstanding receives is back in the pool.</summary>
    /// <remarks>The count comes first: a receive thread replies on the args it received into, so while it replies
    /// to the last datagram the pool already looks idle. It counts a datagram before it returns the args.</remarks>
    public static Task WaitForIdleAsync(UdpEchoServer server, long datagrams, CancellationToken cancellationToken)
    {
        return Poll.UntilAsync(
            () => server.Counters is var c && c.MessagesHandled + c.Drops >= datagrams && c.PoolAvailableCount == c.PoolTotalCount - server.ConcurrentReceives,
            cancellationToken);
    }
}
