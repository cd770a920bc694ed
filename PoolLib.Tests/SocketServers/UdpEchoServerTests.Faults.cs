using System.Net;
using System.Net.Sockets;
using SocketServers;

namespace PoolLib.Tests.SocketServers;

/// <summary>Faults that must not stop the server: a receive loop that throws.</summary>
public sealed partial class UdpEchoServerTests
{
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(30_000)]
    public async Task ReceiveLoop_FirstReceivesThrow_EachFaultLoggedAndEveryReceiveRestarted(int receives, CancellationToken cancellationToken)
    {
        const int Faults = 3;
        const int Datagrams = 10;
        using var log = new LogCapture();
        int receiveCalls = 0;
        var server = new UdpEchoServer(Options(options => options.ConcurrentReceives = receives))
        {
            BeforeReceive = () =>
            {
                if (Interlocked.Increment(ref receiveCalls) <= Faults)
                {
                    throw new InvalidOperationException("injected receive fault");
                }
            },
        };
        await using (server)
        {
            await server.StartAsync(cancellationToken);
            using Socket client = BoundClient();

            // With one receive, each echo needs the loop that failed three times; with four, the idle pool below
            // needs all four loops back in their receives.
            await Poll.UntilAsync(() => server.ReceiveLoopRestarts == Faults, cancellationToken);
            await EchoEachAsync(server, client, Datagrams, cancellationToken);
            await UdpEchoTesting.WaitForIdleAsync(server, receives, Datagrams, cancellationToken);

            Assert.That(server.ReceiveLoopRestarts, Is.EqualTo(Faults));
            Assert.That(server.Counters.MessagesEchoed, Is.EqualTo(Datagrams));
            Assert.That(server.Counters.Drops, Is.Zero);
        }

        string[] errors = log.Lines.Where(line => line.StartsWith("ERROR", StringComparison.Ordinal)).ToArray();
        Assert.That(errors, Has.Length.EqualTo(Faults), "one line per fault, within the limiter's lines");
        Assert.That(errors, Has.All.Contain("UDP receive loop on").And.Contain("it starts again in 100 ms").And.EndWith(nameof(InvalidOperationException)));
    }

    // With a pause of for ever and a grace period of a day, a stop that waited for the pause, or for a receive that
    // will never be made, would not return, and the test would hit its own time limit instead of passing.
    [TestCase(1)]
    [TestCase(4)]
    [CancelAfter(30_000)]
    public async Task StopAsync_ReceiveLoopsPausedAfterFaults_ReturnsWithEverySlotBackAndNoRestart(int receives, CancellationToken cancellationToken)
    {
        int receiveCalls = 0;
        var server = new UdpEchoServer(Options(options =>
        {
            options.ConcurrentReceives = receives;
            options.StopGracePeriod = TimeSpan.FromDays(1);
        }))
        {
            ReceiveRestartDelay = Timeout.InfiniteTimeSpan,
            BeforeReceive = () =>
            {
                Interlocked.Increment(ref receiveCalls);
                throw new InvalidOperationException("injected receive fault");
            },
        };
        try
        {
            await server.StartAsync(cancellationToken);
            await Poll.UntilAsync(() => Volatile.Read(ref receiveCalls) == receives, cancellationToken);
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }

        await StopWithoutCancellingAsync(server, cancellationToken);

        Assert.That(server.Counters.PoolAvailableCount, Is.EqualTo(server.Counters.PoolTotalCount), "every args back in the pool");
        Assert.That(server.ReceiveLoopRestarts, Is.Zero);
        Assert.That(receiveCalls, Is.EqualTo(receives), "no loop started again");
        await server.DisposeAsync();
    }

    private UdpEchoServerOptions Options(Action<UdpEchoServerOptions> configure)
    {
        var options = new UdpEchoServerOptions { Address = IPAddress.Loopback, Port = 0, Processing = processing };
        configure(options);
        return options;
    }

    private static Socket BoundClient()
    {
        var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        return client;
    }

    /// <summary>Sends <paramref name="datagrams"/> datagrams one at a time, each echoed byte-exact before the next.</summary>
    private static async Task EchoEachAsync(UdpEchoServer server, Socket client, int datagrams, CancellationToken cancellationToken)
    {
        byte[] buffer = new byte[64];
        for (int i = 0; i < datagrams; i++)
        {
            byte[] datagram = [42, (byte)i];
            await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            int received = await UdpEchoTesting.ReceiveWithinAsync(client, buffer, cancellationToken);
            Assert.That(buffer[..received], Is.EqualTo(datagram));
        }
    }
}
