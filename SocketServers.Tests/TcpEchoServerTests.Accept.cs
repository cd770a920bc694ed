using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;
using SocketServers.Internal;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// Accepting and its limits: the connection cap, a socket whose set-up fails, the per-address limit, rejection when full.
public sealed partial class TcpEchoServerTests
{
    [Test]
    [CancelAfter(30_000)]
    public async Task MaxConnections_MoreClientsThanCap_ServesAtMostCapAtOnceThenTheRest(CancellationToken cancellationToken)
    {
        const int Cap = 4;
        const int Waiting = 8;
        await using var server = await StartAsync(options => options.MaxConnections = Cap, cancellationToken);
        var releaseFirst = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        async Task RunClientAsync(Task holdBeforeClose, TaskCompletionSource? firstEchoed)
        {
            using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
            byte[] message = new byte[1000];
            byte[] echo = new byte[1000];
            for (int i = 0; i < 5; i++)
            {
                Random.Shared.NextBytes(message);
                await client.SendAllAsync(message, cancellationToken);
                Assert.That(await client.ReceiveExactlyAsync(echo, cancellationToken), Is.EqualTo(message.Length));
                Assert.That(echo, Is.EqualTo(message));
                firstEchoed?.TrySetResult();
            }

            await holdBeforeClose.WaitAsync(cancellationToken);
            client.Shutdown(SocketShutdown.Send);
            Assert.That(await client.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken), Is.Zero);
        }

        // The first Cap clients are served and stay connected: the server is full.
        var served = Enumerable.Range(0, Cap).Select(_ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).ToArray();
        Task[] first = served.Select(echoed => RunClientAsync(releaseFirst.Task, echoed)).ToArray();
        await Task.WhenAll(served.Select(echoed => echoed.Task)).WaitAsync(cancellationToken);

        // More clients connect while the server is full: it accepts none of them, and they wait in the listen backlog
        // (which Linux reports) until the first ones leave.
        Task[] rest = Enumerable.Range(0, Waiting).Select(_ => RunClientAsync(Task.CompletedTask, null)).ToArray();
        if (OperatingSystem.IsLinux())
        {
            await SocketTestExtensions.WithinAsync(
                token => Poll.UntilAsync(() => server.QueuedConnections == Waiting, token), "every client over the cap waits in the backlog", cancellationToken);
        }

        Assert.That(server.Counters.TotalConnections, Is.EqualTo(Cap), "no client accepted past the cap");
        releaseFirst.SetResult();
        await Task.WhenAll(first.Concat(rest));
        await WaitForIdleAsync(server, cancellationToken);

        SocketServerCounters counters = server.Counters;
        Assert.That(counters.PeakConnections, Is.EqualTo(Cap), "never more connections served at once than the cap");
        Assert.That(counters.TotalConnections, Is.EqualTo(Cap + Waiting));
        Assert.That(counters.Drops, Is.Zero);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Accept_SetUpOfOneSocketThrows_ClosesItReleasesItsSlotAndKeepsAccepting(CancellationToken cancellationToken)
    {
        // The set-up reads the connection's first timestamp: that read throws, once.
        var time = new FaultyTimeProvider();
        TcpEchoServerOptions options = LoopbackOptions();
        options.MaxConnections = 1;
        await using var server = await Started.StartAsync(new TcpEchoServer(options, logger: null, time), cancellationToken);
        time.FailNextRead();

        using Socket failed = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        int read;
        try
        {
            read = await failed.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken);
        }
        catch (SocketException ex) when (ex.SocketErrorCode == SocketError.ConnectionReset)
        {
            read = 0;
        }

        Assert.That(read, Is.Zero, "the failed connection is closed");
        await AssertStillServesAsync(server, cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        Assert.That(time.Failures, Is.EqualTo(1), "the set-up met the fault");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task MaxConnectionsPerAddress_OneMoreFromTheSameAddress_ClosedAtOnceAndCounted(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => options.MaxConnectionsPerAddress = 2, cancellationToken);
        using Socket first = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        using Socket second = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 2, cancellationToken);

        using Socket third = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        await AssertRejectedWhileOthersServedAsync(server, third, first, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task RejectWhenFull_ClientOverTheCap_ClosedAtOnceAndCounted(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(
            options =>
            {
                options.MaxConnections = 1;
                options.RejectWhenFull = true;
            },
            cancellationToken);
        using Socket held = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 1, cancellationToken);

        using Socket over = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        await AssertRejectedWhileOthersServedAsync(server, over, held, cancellationToken);
    }

    /// <summary>
    /// <paramref name="rejected"/> is closed at once and counted, <paramref name="held"/> still echoes, and
    /// once it is gone its place serves a new client.
    /// </summary>
    private static async Task AssertRejectedWhileOthersServedAsync(TcpEchoServer server, Socket rejected, Socket held, CancellationToken cancellationToken)
    {
        Assert.That(await rejected.ReadEndAsync(cancellationToken), Is.Zero, "the rejected client is closed at once");
        Assert.That(server.Counters.Rejected, Is.EqualTo(1));
        await held.AssertEchoOnAsync(cancellationToken);
        int openBefore = server.Counters.CurrentConnections;
        held.Dispose();
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == openBefore - 1, cancellationToken);
        await SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint!, 10, cancellationToken);
    }
}
