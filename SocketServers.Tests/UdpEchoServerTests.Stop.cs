using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>A stop in every processing: datagrams in flight are answered, idle receives end at once, every args comes back.</summary>
public sealed partial class UdpEchoServerTests
{
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(30_000)]
    public async Task StopAsync_TrafficInFlight_CompletesWithAllSlotsBack(int receives, CancellationToken cancellationToken)
    {
        var server = await StartAsync(
            options =>
            {
                options.StopGracePeriod = TimeSpan.FromSeconds(2);
                options.ConcurrentReceives = receives;
            },
            cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        try
        {
            byte[] datagram = new byte[512];
            for (int i = 0; i < 500; i++)
            {
                await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            }

            await Poll.UntilAsync(() => server.Counters.MessagesHandled > 0, cancellationToken);
            await server.StopAsync(cancellationToken);

            SocketServerCounters counters = server.Counters;
            Assert.That(counters.PoolAvailableCount, Is.EqualTo(counters.PoolTotalCount), "every args back in the pool");
            Assert.That(server.IsRunning, Is.False);
            Assert.That(server.StopAsync(cancellationToken).IsCompletedSuccessfully, Is.True, "a second stop is harmless");
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    // With a grace period of a day, a stop that does not wake the idle receives (blocked receive threads, pending
    // asynchronous receives) would wait it out, and the test would hit its own time limit instead of passing.
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(30_000)]
    public async Task StopAsync_IdleReceives_ReturnsWithoutWaitingOutTheGracePeriod(int receives, CancellationToken cancellationToken)
    {
        var server = await StartAsync(
            options =>
            {
                options.StopGracePeriod = TimeSpan.FromDays(1);
                options.ConcurrentReceives = receives;
            },
            cancellationToken);
        try
        {
            using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
            client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            await client.SendToAsync(new byte[] { 1, 2, 3 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            await UdpEchoTesting.ReceiveWithinAsync(client, new byte[16], cancellationToken);
            await UdpEchoTesting.WaitForIdleAsync(server, datagrams: 1, cancellationToken);
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }

        await StopWithoutCancellingAsync(server, cancellationToken);

        SocketServerCounters counters = server.Counters;
        Assert.That(counters.PoolAvailableCount, Is.EqualTo(counters.PoolTotalCount), "every args back in the pool");
        Assert.That(counters.MessagesHandled, Is.EqualTo(1));
        Assert.That(server.IsRunning, Is.False);
        await server.DisposeAsync();
    }
}
