using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>Echo loops (CVE-2024-2169): one datagram whose forged sender is another echo server makes the two answer
/// each other without end, unless this server refuses to.</summary>
/// <remarks>
/// Each test forges the sender with a raw socket and runs every server with one receive, so that a datagram sent later
/// is handled after it: once a probe's echo has come back from each server, the counters hold everything the forged
/// datagram caused, and a loop still running would show in them.
/// </remarks>
public sealed partial class UdpEchoServerTests
{
    private static readonly byte[] s_forgedPayload = [0x10, 0x0F];

    // Two instances on the same port, on two addresses (two hosts, here two loopback addresses): the forged datagram
    // says it comes from the other instance.
    [Test]
    [CancelAfter(30_000)]
    public async Task Echo_ForgedSenderIsAnotherInstanceOnTheSamePort_DroppedAndNoLoopStarts(CancellationToken cancellationToken)
    {
        using ForgedDatagramSender forger = ForgedDatagramSender.OpenOrInconclusive();
        await using UdpEchoServer first = await StartAsync(options => options.ConcurrentReceives = 1, cancellationToken);
        IPEndPoint firstEndPoint = first.LocalEndPoint!;
        await using UdpEchoServer second = await StartOnSecondLoopbackAddressAsync(firstEndPoint.Port, cancellationToken);
        using var meter = MeterReader.ForServer(firstEndPoint.Port);

        forger.Send(source: second.LocalEndPoint!, destination: firstEndPoint, s_forgedPayload);
        await Poll.UntilAsync(() => first.Counters is var c && c.MessagesHandled + c.Drops >= 1, cancellationToken);
        await ProbeAsync(first, cancellationToken);
        await ProbeAsync(second, cancellationToken);

        Assert.That((first.Counters.Drops, first.Counters.MessagesHandled), Is.EqualTo((1, 1)), "the forged datagram dropped, the probe echoed");
        Assert.That((second.Counters.Drops, second.Counters.MessagesHandled), Is.EqualTo((0, 1)), "only the probe reached the second instance");
        AssertOneDropMetered(meter, "echo_server_port");
    }

    // The server itself as the sender (it would answer itself for ever), and the console host's default port, where
    // another instance of this server most likely listens.
    [TestCase(0)]
    [TestCase(SocketServerOptions.DefaultPort)]
    [CancelAfter(30_000)]
    public async Task Echo_ForgedSenderOnAnEchoServerPort_DroppedAndNothingEchoed(int senderPort, CancellationToken cancellationToken)
    {
        using ForgedDatagramSender forger = ForgedDatagramSender.OpenOrInconclusive();
        await using UdpEchoServer server = await StartAsync(options => options.ConcurrentReceives = 1, cancellationToken);
        IPEndPoint serverEndPoint = server.LocalEndPoint!;
        var sender = new IPEndPoint(IPAddress.Loopback, senderPort == 0 ? serverEndPoint.Port : senderPort);

        forger.Send(sender, serverEndPoint, s_forgedPayload);
        await Poll.UntilAsync(() => server.Counters is var c && c.MessagesHandled + c.Drops >= 1, cancellationToken);
        await ProbeAsync(server, cancellationToken);

        Assert.That((server.Counters.Drops, server.Counters.MessagesHandled), Is.EqualTo((1, 1)), "the forged datagram dropped, the probe echoed");
    }

    // Two echo servers on different unprivileged ports: the limited one refuses the datagram over its limit, which
    // ends the loop, since a loop is the forged datagram going back and forth.
    [Test]
    [CancelAfter(30_000)]
    public async Task Echo_ForgedSenderIsAnEchoServerOnAnotherPort_LoopEndsWithinTheReplyLimit(CancellationToken cancellationToken)
    {
        const int Limit = 50;
        using ForgedDatagramSender forger = ForgedDatagramSender.OpenOrInconclusive();

        // The limit's clock stands still, so that the whole loop falls in one window however slowly the machine runs it.
        var options = new UdpEchoServerOptions
        {
            Address = IPAddress.Loopback, Port = 0, Processing = processing, ConcurrentReceives = 1, MaxRepliesPerEndpointPerSecond = Limit,
        };
        await using UdpEchoServer limited = await Started.StartAsync(new UdpEchoServer(options, logger: null, new FakeTimeProvider()), cancellationToken);
        await using UdpEchoServer other = await StartAsync(options => options.ConcurrentReceives = 1, cancellationToken);
        using var meter = MeterReader.ForServer(limited.LocalEndPoint!.Port);

        forger.Send(source: other.LocalEndPoint!, destination: limited.LocalEndPoint!, s_forgedPayload);

        // A limit that did not hold would let the loop run on: stop waiting far beyond any count the limit allows.
        await Poll.UntilAsync(() => limited.Counters.Drops >= 1 || limited.Counters.MessagesHandled > 100 * Limit, cancellationToken);
        await ProbeAsync(limited, cancellationToken);
        await ProbeAsync(other, cancellationToken);
        SocketServerCounters limitedAfter = limited.Counters;
        SocketServerCounters otherAfter = other.Counters;
        await ProbeAsync(limited, cancellationToken);
        await ProbeAsync(other, cancellationToken);

        Assert.That(limited.Counters.Drops, Is.EqualTo(1), "the one datagram going back and forth, refused once");
        // One window's worth; the probe on top.
        Assert.That(limitedAfter.MessagesHandled - 1, Is.EqualTo(Limit));
        Assert.That(otherAfter.MessagesHandled, Is.EqualTo(limitedAfter.MessagesHandled), "the other server answered each reply, then the probe");
        Assert.That(
            (limited.Counters.MessagesHandled, other.Counters.MessagesHandled),
            Is.EqualTo((limitedAfter.MessagesHandled + 1, otherAfter.MessagesHandled + 1)),
            "once the loop has ended, only the second probes are echoed");
        AssertOneDropMetered(meter, "rate_limited");
    }

    /// <summary>A second server with one receive on 127.0.0.2 and <paramref name="port"/>; inconclusive where that
    /// address is not a loopback address of this machine.</summary>
    private async Task<UdpEchoServer> StartOnSecondLoopbackAddressAsync(int port, CancellationToken cancellationToken)
    {
        var second = new UdpEchoServer(Options(options =>
        {
            options.Address = IPAddress.Parse("127.0.0.2");
            options.Port = port;
            options.ConcurrentReceives = 1;
        }));
        try
        {
            await second.StartAsync(cancellationToken);
            return second;
        }
        catch (IOException ex) when (ex.InnerException is SocketException { SocketErrorCode: SocketError.AddressNotAvailable })
        {
            await second.DisposeAsync();
            Assert.Inconclusive("127.0.0.2 is not a loopback address of this machine");
            throw;
        }
    }

    /// <summary>Echoes one datagram from a new client, then waits until <paramref name="server"/> is idle again.</summary>
    private static async Task ProbeAsync(UdpEchoServer server, CancellationToken cancellationToken)
    {
        long before = server.Counters is var c ? c.MessagesHandled + c.Drops : 0;
        using Socket client = SocketTestExtensions.BoundUdpClient();
        await EchoEachAsync(server, client, datagrams: 1, cancellationToken);
        await UdpEchoTesting.WaitForIdleAsync(server, before + 1, cancellationToken);
    }
}
