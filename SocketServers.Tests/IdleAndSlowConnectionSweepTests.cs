using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Time.Testing;
using PoolLib;
using PoolLib.Tests;
using SocketServers.Internal;

namespace SocketServers.Tests;

// The sweep over connections whose loops never run: what each has read stays as the test sets it, so that the sweep
// meets, at a moment the test chooses, a connection whose request has arrived and that the server has not read yet
// (as a burst leaves connections whose loops wait for a core).
public sealed class IdleAndSlowConnectionSweepTests
{
    private static readonly TimeSpan s_window = TimeSpan.FromSeconds(1);

    // 2,000 clients sending a PING each against 1,000 slots: the sweep took connections not yet served, whose PING
    // waited unread, for the quietest and closed them unanswered.
    [Test]
    [CancelAfter(10_000)]
    public async Task RunAsync_QuietestConnectionHasAnUnreadRequest_EvictsTheQuietOneWithNoInput(CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var test = new Connections(time);
        (Socket unreadClient, SocketConnection unread) = await test.AcceptAsync(cancellationToken);
        time.Advance(TimeSpan.FromMilliseconds(1));
        (Socket quietClient, SocketConnection quiet) = await test.AcceptAsync(cancellationToken);
        await test.SendUnreadRequestAsync(unreadClient, unread, cancellationToken);

        // One client waits. The first sweep, an eighth of the window in, judges both connections slow (they have read
        // nothing) and evicts one.
        await SweepAsync(test, new SweepSettings(Timeout.InfiniteTimeSpan, MinDataRate: 1024, WaitingClients: 1, s_window / 8, Count: 1), cancellationToken);

        Assert.That(unread.IsClosing, Is.False, "the connection whose request waits to be read is kept");
        Assert.That(quiet.IsClosing, Is.True, "the quiet connection with no input is evicted instead");
        Assert.That(await quietClient.ReadEndAsync(cancellationToken), Is.Zero);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task RunAsync_IdleConnectionHasAnUnreadRequest_KeepsItAndClosesTheIdleOneWithNoInput(CancellationToken cancellationToken)
    {
        using var test = new Connections(new FakeTimeProvider());
        (Socket unreadClient, SocketConnection unread) = await test.AcceptAsync(cancellationToken);
        (Socket idleClient, SocketConnection idle) = await test.AcceptAsync(cancellationToken);
        await test.SendUnreadRequestAsync(unreadClient, unread, cancellationToken);

        // A sweep every quarter of the idle timeout: the fourth comes at the timeout.
        TimeSpan idleTimeout = TimeSpan.FromSeconds(1);
        await SweepAsync(test, new SweepSettings(idleTimeout, MinDataRate: 0, WaitingClients: 0, idleTimeout / 4, Count: 4), cancellationToken);

        Assert.That(unread.IsClosing, Is.False, "the connection whose request waits to be read is not idle");
        Assert.That(idle.IsClosing, Is.True);
        Assert.That(await idleClient.ReadEndAsync(cancellationToken), Is.Zero);
    }

    // The linger after a handler's close has no timer of its own: the sweep resets the connection once its deadline,
    // a second on the connections' clock, has passed.
    [Test]
    [CancelAfter(10_000)]
    public async Task RunAsync_LingerAfterTheHandlersClosePassesItsDeadline_ResetsTheConnection(CancellationToken cancellationToken)
    {
        using var test = new Connections(new FakeTimeProvider());
        (_, SocketConnection closed) = await test.AcceptAsync(cancellationToken);
        closed.Close();
        closed.EndStream(); // as the loop does, when it next looks for a close request
        var settings = new SweepSettings(Timeout.InfiniteTimeSpan, MinDataRate: 0, WaitingClients: 0, TimeSpan.FromMilliseconds(250), Count: 2);

        await SweepAsync(test, settings, cancellationToken); // up to 750 ms on
        bool resetBefore = test.ServerSocket(closed).SafeHandle.IsClosed;
        await SweepAsync(test, settings, cancellationToken); // 1,000 ms on, and later

        Assert.That(resetBefore, Is.False);
        Assert.That(test.ServerSocket(closed).SafeHandle.IsClosed, Is.True);
    }

    /// <summary>Runs a sweep over the test's connections: moves the clock one period at a time for as many sweeps as
    /// <paramref name="settings"/> say, and one more, whose start shows the last of them over; then stops it.</summary>
    private static async Task SweepAsync(Connections test, SweepSettings settings, CancellationToken cancellationToken)
    {
        // Each sweep reads its clock once, first; the connections, whose loops never run, read their own.
        var clock = new CountingTime(test.Time);
        var sweep = new IdleAndSlowConnectionSweep(settings.IdleTimeout, settings.MinDataRate, s_window, test.Time, new MillisecondClock(clock));
        test.AddTo(sweep);
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        Task sweeping = sweep.RunAsync(() => settings.WaitingClients, stop.Token);
        for (int begun = 1; begun <= settings.Count + 1; begun++)
        {
            test.Time.Advance(settings.Period);
            await Poll.UntilAsync(() => clock.Reads == begun, cancellationToken);
        }

        await stop.CancelAsync();
        await sweeping;
    }

    /// <summary>The sweep's settings, how many clients it is told wait, its period and how many sweeps to run.</summary>
    private sealed record SweepSettings(TimeSpan IdleTimeout, int MinDataRate, int WaitingClients, TimeSpan Period, int Count);

    /// <summary>Connections accepted from a listener of the test's own, whose loops never run: the server's side never
    /// reads.</summary>
    private sealed class Connections(FakeTimeProvider time) : IDisposable
    {
        private readonly Socket _listener = Listen();
        private readonly SocketArgsPool _args = new(bufferSize: 0, maxCapacity: 8);
        private readonly List<Socket> _sockets = [];
        private readonly Dictionary<SocketConnection, Socket> _accepted = [];

        public Owner Owner { get; } = new(time);

        public FakeTimeProvider Time => time;

        public async Task<(Socket Client, SocketConnection Connection)> AcceptAsync(CancellationToken cancellationToken)
        {
            Socket client = await SocketTestExtensions.ConnectTcpAsync((IPEndPoint)_listener.LocalEndPoint!, cancellationToken);
            _sockets.Add(client);
            Socket accepted = await _listener.AcceptAsync(cancellationToken);
            _sockets.Add(accepted);
            PoolSlot<SocketAsyncEventArgs> slot = _args.TakeSlot();
            var connection = new SocketConnection(Owner, slot, (PooledSocketArgs)slot.Object, accepted, _accepted.Count + 1, remoteEndPoint: null, tls: null);
            _accepted.Add(connection, accepted);
            return (client, connection);
        }

        /// <summary>Sends a PING, and waits until it has arrived on the server's side, where nothing reads it.</summary>
        public async Task SendUnreadRequestAsync(Socket client, SocketConnection connection, CancellationToken cancellationToken)
        {
            await client.SendAllAsync("PING\r\n"u8.ToArray(), cancellationToken);
            await Poll.UntilAsync(() => _accepted[connection].Available == 6, cancellationToken);
        }

        public Socket ServerSocket(SocketConnection connection) => _accepted[connection];

        public void AddTo(IdleAndSlowConnectionSweep sweep)
        {
            foreach (SocketConnection connection in _accepted.Keys)
            {
                sweep.Add(connection);
            }
        }

        public void Dispose()
        {
            _sockets.ForEach(socket => socket.Dispose());
            _listener.Dispose();
        }

        private static Socket Listen()
        {
            var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            listener.Listen();
            return listener;
        }
    }

    /// <summary>Just what a connection that never runs asks of its server: its clock and its counts.</summary>
    private sealed class Owner(TimeProvider time) : ITcpConnectionOwner
    {
        public TcpConnectionHandler Handler { get; } = new NoReply();

        public ILogger Logger => NullLogger.Instance;

        public LiveCounters Count { get; } = new();

        public Pool<byte[]> Buffers => throw new NotSupportedException("the loop never runs");

        public Pool<byte[]> SendBuffers => throw new NotSupportedException("the loop never runs");

        public LargeMessageBuffers LargeBuffers => throw new NotSupportedException("the loop never runs");

        public MillisecondClock Clock { get; } = new(time);

        public LogRateLimiter ConnectionWarnings { get; } = new();

        public void OnHandlerFailed(Exception exception)
        {
        }

        public void OnMessageTooLarge(string reason)
        {
        }

        public void OnConnectionClosed(SocketConnection connection, TimeSpan duration)
        {
        }
    }

    /// <summary>The test's clock, counting its reads: a sweep's start.</summary>
    private sealed class CountingTime(FakeTimeProvider time) : TimeProvider
    {
        private int _reads;

        public int Reads => Volatile.Read(ref _reads);

        public override long TimestampFrequency => time.TimestampFrequency;

        public override long GetTimestamp()
        {
            Interlocked.Increment(ref _reads);
            return time.GetTimestamp();
        }
    }

    private sealed class NoReply : TcpConnectionHandler
    {
        public override ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data) => new(data.Length);
    }
}
