using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;

namespace SocketServers.Tests;

// What both servers get from SocketServer: here, one dual-mode socket for "::". These tests bind "::"
// (every interface, port 0), the only way to prove that IPv4 and IPv6 clients share one socket.
public sealed class SocketServerTests
{
    // Two servers of each kind in one process: each pool is named after its server and the endpoint it listens on, so
    // the PoolLib meter reports every pool under a name of its own and no cap hides another.
    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_TwoServersOfEachKind_EachPoolReportsItsCapUnderItsOwnName(CancellationToken cancellationToken)
    {
        using var max = new MetricCollector<long>(null, "PoolLib", "pool.objects.max");
        await using var tcp = new TcpEchoServer(new TcpEchoServerOptions { Port = 0, MaxConnections = 7 });
        await using var otherTcp = new TcpEchoServer(new TcpEchoServerOptions { Port = 0, MaxConnections = 8 });
        await using var udp = new UdpEchoServer(new UdpEchoServerOptions { Port = 0, ConcurrentReceives = 3 });
        await using var otherUdp = new UdpEchoServer(new UdpEchoServerOptions { Port = 0, ConcurrentReceives = 4 });
        foreach (SocketServer server in new SocketServer[] { tcp, otherTcp, udp, otherUdp })
        {
            await server.StartAsync(cancellationToken);
        }

        max.RecordObservableInstruments();

        Dictionary<string, long> caps = max.GetMeasurementSnapshot()
            .GroupBy(measurement => (string)measurement.Tags["pool.name"]!)
            .ToDictionary(pool => pool.Key, pool => pool.Last().Value);
        Assert.That(caps, Does.ContainKey($"tcp-echo-args@{tcp.LocalEndPoint}").WithValue(7));
        Assert.That(caps, Does.ContainKey($"tcp-echo-args@{otherTcp.LocalEndPoint}").WithValue(8));
        Assert.That(caps, Does.ContainKey($"tcp-echo-buffers@{tcp.LocalEndPoint}").WithValue(7));
        Assert.That(caps, Does.ContainKey($"tcp-echo-buffers@{otherTcp.LocalEndPoint}").WithValue(8));
        Assert.That(caps, Does.ContainKey($"udp-echo-args@{udp.LocalEndPoint}").WithValue(3));
        Assert.That(caps, Does.ContainKey($"udp-echo-args@{otherUdp.LocalEndPoint}").WithValue(4));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_TcpOnIPv6Any_EchoesIPv4AndIPv6Clients(CancellationToken cancellationToken)
    {
        await using var server = new TcpEchoServer(new TcpEchoServerOptions { Address = IPAddress.IPv6Any, Port = 0 });
        await server.StartAsync(cancellationToken);
        int port = server.LocalEndPoint!.Port;

        await SocketTestExtensions.AssertEchoesAsync(new IPEndPoint(IPAddress.Loopback, port), 100, cancellationToken);
        await SocketTestExtensions.AssertEchoesAsync(new IPEndPoint(IPAddress.IPv6Loopback, port), 100, cancellationToken);

        Assert.That(server.Counters.TotalConnections, Is.EqualTo(2));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_ReusePortOnBoth_SecondServerSharesThePortAndWithoutItFails(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "reuse-port is Linux only");
        await using var first = new TcpEchoServer(new TcpEchoServerOptions { Port = 0, ReusePort = true });
        await first.StartAsync(cancellationToken);
        int port = first.LocalEndPoint!.Port;
        await using var sharing = new TcpEchoServer(new TcpEchoServerOptions { Port = port, ReusePort = true });
        await using var notSharing = new TcpEchoServer(new TcpEchoServerOptions { Port = port });
        await using var udpFirst = new UdpEchoServer(new UdpEchoServerOptions { Port = 0, ReusePort = true });
        await udpFirst.StartAsync(cancellationToken);
        await using var udpSharing = new UdpEchoServer(new UdpEchoServerOptions { Port = udpFirst.LocalEndPoint!.Port, ReusePort = true });

        await sharing.StartAsync(cancellationToken);
        await udpSharing.StartAsync(cancellationToken);

        Assert.That(sharing.LocalEndPoint!.Port, Is.EqualTo(port));
        Assert.That(udpSharing.LocalEndPoint!.Port, Is.EqualTo(udpFirst.LocalEndPoint.Port));
        await Assert.ThrowsAsync<IOException>(() => notSharing.StartAsync(cancellationToken));
        await SocketTestExtensions.AssertEchoesAsync(new IPEndPoint(IPAddress.Loopback, port), 100, cancellationToken);
    }

    [TestCase(UdpProcessing.ReceiveThreads)]
    [TestCase(UdpProcessing.ReplyBlock)]
    [CancelAfter(10_000)]
    public async Task StartAsync_UdpOnIPv6Any_EchoesIPv4AndIPv6Senders(UdpProcessing processing, CancellationToken cancellationToken)
    {
        await using UdpEchoServer server = await UdpEchoTesting.StartAsync(processing, options => options.Address = IPAddress.IPv6Any, cancellationToken);
        int port = server.LocalEndPoint!.Port;

        foreach (IPAddress client in new[] { IPAddress.Loopback, IPAddress.IPv6Loopback })
        {
            using var socket = new Socket(client.AddressFamily, SocketType.Dgram, ProtocolType.Udp);
            socket.Bind(new IPEndPoint(client, 0));
            socket.Connect(new IPEndPoint(client, port));
            byte[] datagram = [1, 2, 3, 4, 5, 6, 7, (byte)client.AddressFamily];
            await socket.SendAsync(datagram, SocketFlags.None, cancellationToken);
            byte[] echo = new byte[64];

            int received = await UdpEchoTesting.ReceiveWithinAsync(socket, echo, cancellationToken);

            Assert.That(echo[..received], Is.EqualTo(datagram), $"echo to {client}");
        }
    }
}
