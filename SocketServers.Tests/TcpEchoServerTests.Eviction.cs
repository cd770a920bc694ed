using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;
using PoolLib.Tests.Fakes;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// Clients that cannot hold the server: idle ones are closed, and the quietest slow one is evicted for a waiting client.
public sealed partial class TcpEchoServerTests
{
    [Test]
    [CancelAfter(20_000)]
    public async Task IdleTimeout_ClientSendsNothing_ServerClosesConnection(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => options.IdleTimeout = TimeSpan.FromMilliseconds(200), cancellationToken);
        using Socket idle = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        int received = await idle.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken);

        Assert.That(received, Is.Zero, "the server closed the idle connection");
        await WaitForIdleAsync(server, cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        await AssertStillServesAsync(server, cancellationToken);
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task MinDataRate_SlowClientsHoldEverySlot_WaitingClientServedAndStreamingClientNeverCut(CancellationToken cancellationToken)
    {
        const int SlowClients = 4;
        await using var server = await StartAsync(
            options =>
            {
                options.MaxConnections = SlowClients + 1;
                options.SlowConnectionWindow = TimeSpan.FromSeconds(1);
            },
            cancellationToken);
        using var stopClients = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        var slow = new List<Socket>();
        Socket streaming = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        try
        {
            for (int i = 0; i < SlowClients; i++)
            {
                slow.Add(await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken));
            }

            await Poll.UntilAsync(() => server.Counters.CurrentConnections == SlowClients + 1, cancellationToken);
            Task[] trickles = [.. slow.Select(client => TrickleAsync(client, stopClients.Token))];
            Task<long> stream = StreamAsync(streaming, stopClients.Token);

            // Every slot is taken: this client waits in the backlog until a slow one is evicted.
            await SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint!, 100, cancellationToken);

            await stopClients.CancelAsync();
            long streamed = await stream;
            await Task.WhenAll(trickles);
            Assert.That(streamed, Is.GreaterThan(0), "the streaming client's echoes all came back byte-exact");
            Assert.That(server.Counters.Evicted, Is.GreaterThanOrEqualTo(1));
            await streaming.AssertEchoOnAsync(cancellationToken);
        }
        finally
        {
            streaming.Dispose();
            slow.ForEach(client => client.Dispose());
        }
    }

    // A connection whose last window was slow may stream now: what it receives now must count, so that it is never
    // the one evicted while it moves more than the minimum rate.
    [Test]
    [CancelAfter(60_000)]
    public async Task MinDataRate_QuietForAWindowThenStreaming_NeverEvictedForAWaitingClient(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(
            options =>
            {
                options.MaxConnections = 2;
                options.SlowConnectionWindow = TimeSpan.FromSeconds(1);
            },
            cancellationToken);
        using var stopStreaming = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        using Socket quiet = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 1, cancellationToken);
        using Socket streaming = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 2, cancellationToken);

        // The quiet client is evicted for the first waiting client at the end of its first window. By then the
        // streaming client's first window, begun just after, has mostly ended as well, slow with a few bytes; if so,
        // the quiet one is still the quieter of the two (active on an earlier tick of the clock the server reads).
        long accepted = Environment.TickCount64;
        await Poll.UntilAsync(() => Environment.TickCount64 > accepted, cancellationToken);
        await streaming.AssertEchoOnAsync(cancellationToken);
        using Socket first = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await first.AssertEchoOnAsync(cancellationToken);
        Assert.That(await quiet.ReadEndAsync(cancellationToken), Is.Zero, "the quiet client was evicted");

        // The streaming client streams, in the window after its slow one; the second waiting client must take the
        // place of the first, which goes quiet, once the first's own window has ended.
        long before = server.Counters.BytesSent;
        Task<long> stream = StreamAsync(streaming, stopStreaming.Token);
        await Poll.UntilAsync(() => server.Counters.BytesSent - before >= 64 * KiB, cancellationToken);
        using Socket second = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await second.AssertEchoOnAsync(cancellationToken);
        await stopStreaming.CancelAsync();
        long streamed = await stream;

        Assert.That(streamed, Is.GreaterThan(0), "the streaming client was never cut, and its echoes came back byte-exact");
        Assert.That(await first.ReadEndAsync(cancellationToken), Is.Zero, "the first client, quiet since its echo, was evicted");
        Assert.That(server.Counters.Evicted, Is.EqualTo(2));
    }

    // One slow connection evicted per sweep left a client waiting 27 s behind 120 slow ones, at 20 connections. Each
    // sweep must make room for as many clients as wait, and judge a connection before its first window ends, so that a
    // client queued behind three times as many slow clients as the server holds is served within one window. The sweep
    // runs on a clock the test moves one sweep (an eighth of a window) at a time, letting the server settle after each.
    [Test]
    [CancelAfter(60_000)]
    public async Task MinDataRate_BacklogOfSlowClients_WaitingClientServedWithinOneWindow(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the server counts the clients in its backlog on Linux");
        const int Slots = 4;
        const int Queued = 3 * Slots;
        TimeSpan window = TimeSpan.FromSeconds(2);
        var time = new TimerRecordingTimeProvider();
        TcpEchoServerOptions options = LoopbackOptions();
        options.MaxConnections = Slots;
        options.SlowConnectionWindow = window;
        options.IdleTimeout = Timeout.InfiniteTimeSpan;
        await using var server = new TcpEchoServer(options, logger: null, time);
        await server.StartAsync(cancellationToken);
        var slow = new List<Socket>();
        try
        {
            await Poll.UntilAsync(() => time.Timers.Count == 1, cancellationToken);
            for (int i = 0; i < Slots + Queued; i++)
            {
                slow.Add(await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken));
            }

            using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
            byte[] message = [1, 2, 3];
            await client.SendAllAsync(message, cancellationToken);
            await Poll.UntilAsync(() => server.Counters.CurrentConnections == Slots && server.QueuedConnections == Queued + 1, cancellationToken);

            TimeSpan waited = TimeSpan.Zero;
            while (server.QueuedConnections > 0)
            {
                long expected = Math.Max(0, server.QueuedConnections - Slots);
                time.Advance(window / 8);
                waited += window / 8;
                await SocketTestExtensions.WithinAsync(
                    token => Poll.UntilAsync(() => server.QueuedConnections == expected && server.Counters.CurrentConnections == Slots, token),
                    $"room made for as many waiting clients as slow connections held, {waited.TotalSeconds} s into the wait",
                    cancellationToken);
            }

            Assert.That(waited, Is.LessThanOrEqualTo(window), "of the sweep's clock");
            byte[] echo = new byte[message.Length];
            Assert.That(await client.ReceiveExactlyAsync(echo, cancellationToken), Is.EqualTo(message.Length));
            Assert.That(echo, Is.EqualTo(message));
            Assert.That(server.Counters.Evicted, Is.EqualTo(Queued + 1), "three waves of four slow clients, then one for the last client waiting");
        }
        finally
        {
            slow.ForEach(socket => socket.Dispose());
        }
    }

    /// <summary>Sends one byte every two seconds and reads its echo, until cancelled or evicted.</summary>
    private static async Task TrickleAsync(Socket client, CancellationToken cancellationToken)
    {
        byte[] one = [42];
        try
        {
            while (true)
            {
                await client.SendAllAsync(one, cancellationToken);
                if (await client.ReceiveExactlyAsync(new byte[1], cancellationToken) == 0)
                {
                    return;
                }

                await Task.Delay(TimeSpan.FromSeconds(2), cancellationToken);
            }
        }
        catch (Exception ex) when (ex is OperationCanceledException or SocketException)
        {
            // Stopped by the test, or evicted by the server.
        }
    }

    /// <summary>Streams about 1 MiB/s (64 KiB every 62.5 ms) and checks every echo until cancelled, then once more.</summary>
    /// <returns>The bytes echoed; -1 if an echo was short or wrong, or the server cut the connection.</returns>
    private static async Task<long> StreamAsync(Socket client, CancellationToken cancellationToken)
    {
        var chunk = new byte[64 * 1024];
        var echo = new byte[chunk.Length];
        long total = 0;
        for (int round = 0; ; round++)
        {
            Array.Fill(chunk, (byte)round);
            int received;
            try
            {
                await client.SendAllAsync(chunk, CancellationToken.None);
                received = await client.ReceiveExactlyAsync(echo, CancellationToken.None);
            }
            catch (SocketException)
            {
                return -1;
            }

            if (received != chunk.Length || !echo.AsSpan().SequenceEqual(chunk))
            {
                return -1;
            }

            total += received;
            if (cancellationToken.IsCancellationRequested)
            {
                // The last round started after the cancellation: the connection was served to the end.
                return total;
            }

            await Task.Delay(TimeSpan.FromMilliseconds(62.5), cancellationToken).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        }
    }
}
