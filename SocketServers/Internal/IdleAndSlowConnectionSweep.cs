using System.Collections.Concurrent;

namespace SocketServers.Internal;

/// <summary>
/// A TCP server's open connections, and the one periodic sweep over them: it ends the linger of connections the
/// handler closed, closes connections idle for <see cref="TcpServerOptions.IdleTimeout"/>, and, while every connection
/// is taken and clients wait in the backlog, evicts as many of the quietest of those below
/// <see cref="TcpServerOptions.MinDataRate"/> as clients wait. Neither closes a connection whose input has arrived and
/// waits to be read. No timer per connection, and nothing per message but a timestamp and a byte count.
/// </summary>
/// <remarks>Thread safety: <see cref="Add"/>, <see cref="Remove"/> and <see cref="ForEach"/> may be called from any
/// thread; <see cref="RunAsync"/> runs once at a time, and alone reads and moves each connection's rate window.</remarks>
internal sealed class IdleAndSlowConnectionSweep
{
    // The longest period: a linger ends at most this long after its deadline.
    private const long MaxPeriodMs = 250;

    // Every open connection; added by the accept loop before the connection runs, removed when it has closed.
    private readonly ConcurrentDictionary<SocketConnection, byte> _connections = new();
    private readonly TimeSpan _idleTimeout;
    private readonly int _minDataRate;
    private readonly TimeSpan _slowConnectionWindow;
    private readonly TimeProvider _time;
    private readonly MillisecondClock _clock;

    // The slow connections one sweep found, with their last activity as it was read (it moves meanwhile, and a sort
    // must compare fixed values); the sweep's alone, kept to be filled again.
    private readonly List<(long LastActivity, SocketConnection Connection)> _slow = [];

    /// <summary>Creates the registry and the sweep's settings.</summary>
    /// <param name="idleTimeout">How long a connection may neither receive nor send; <see cref="Timeout.InfiniteTimeSpan"/> for ever.</param>
    /// <param name="minDataRate">Bytes a second below which a connection is slow; 0 never evicts.</param>
    /// <param name="slowConnectionWindow">The window over which the rate is measured.</param>
    /// <param name="time">What the sweep's timer runs on.</param>
    /// <param name="clock">The connections' clock (<see cref="ITcpConnectionOwner.Clock"/>), read on the same time.</param>
    public IdleAndSlowConnectionSweep(TimeSpan idleTimeout, int minDataRate, TimeSpan slowConnectionWindow, TimeProvider time, MillisecondClock clock)
    {
        _idleTimeout = idleTimeout;
        _minDataRate = minDataRate;
        _slowConnectionWindow = slowConnectionWindow;
        _time = time;
        _clock = clock;
    }

    /// <summary>Registers a connection before it runs.</summary>
    public void Add(SocketConnection connection) => _connections.TryAdd(connection, 0);

    /// <summary>Forgets a connection that has closed.</summary>
    public void Remove(SocketConnection connection) => _connections.TryRemove(connection, out _);

    /// <summary>Runs <paramref name="action"/> on every connection open now (one added or removed meanwhile may or may not be seen).</summary>
    public void ForEach(Action<SocketConnection> action)
    {
        foreach (var (connection, _) in _connections)
        {
            action(connection);
        }
    }

    /// <summary>Sweeps periodically until <paramref name="stopping"/> is cancelled (once the server's stop has drained
    /// its connections: lingers end during the stop too).</summary>
    /// <param name="waitingClients">How many clients wait in the listen backlog while every connection is taken; 0
    /// while there is room.</param>
    /// <param name="stopping">Ends the sweep.</param>
    /// <returns>A task that completes when the server stops.</returns>
    /// <exception cref="Exception">Anything unexpected.</exception>
    public async Task RunAsync(Func<int> waitingClients, CancellationToken stopping)
    {
        bool closesIdle = _idleTimeout != Timeout.InfiniteTimeSpan;
        long period = closesIdle
            ? Math.Clamp(_idleTimeout.Ticks / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerMillisecond * MaxPeriodMs)
            : TimeSpan.TicksPerMillisecond * MaxPeriodMs;
        long windowMs = (long)_slowConnectionWindow.TotalMilliseconds;
        long eighthWindowMs = Math.Max(1, windowMs / 8);
        if (_minDataRate > 0)
        {
            // Each sweep lets in as many waiting clients as slots it frees: eight times a window, a client queued behind
            // eight times as many slow clients as the server holds is in within one window.
            period = Math.Min(period, eighthWindowMs * TimeSpan.TicksPerMillisecond);
        }

        long timeoutMs = closesIdle ? (long)_idleTimeout.TotalMilliseconds : long.MaxValue;

        // Half a period: a connection let in just after one sweep is judged by the next.
        long judgedAfterMs = Math.Max(1, eighthWindowMs / 2);
        try
        {
            using var timer = new PeriodicTimer(TimeSpan.FromTicks(period), _time);
            while (await timer.WaitForNextTickAsync(stopping).ConfigureAwait(false))
            {
                SweepOnce(timeoutMs, windowMs, judgedAfterMs);
                if (_slow.Count > 0 && waitingClients() is > 0 and int waiting)
                {
                    EvictQuietest(waiting);
                }

                _slow.Clear();
            }
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }

    /// <summary>Ends the lingers that are over, closes the connections idle for <paramref name="timeoutMs"/> and lists the
    /// slow ones in <see cref="_slow"/>.</summary>
    private void SweepOnce(long timeoutMs, long windowMs, long judgedAfterMs)
    {
        long now = _clock.Now;
        foreach (var (connection, _) in _connections)
        {
            if (connection.IsLingerDue(now))
            {
                connection.EndLinger();
                continue;
            }

            if (connection.IsHandlerAtWork)
            {
                connection.RestartRateWindow(now);
                continue;
            }

            connection.NoteSendQueueDrain(now);
            long lastActivity = connection.LastActivity;
            if (now - lastActivity >= timeoutMs)
            {
                if (!connection.HasUnreadInput)
                {
                    connection.CloseIdle();
                }
            }
            else if (_minDataRate > 0 && connection.IsSlow(now, windowMs, _minDataRate, judgedAfterMs) && !connection.IsClosing)
            {
                _slow.Add((lastActivity, connection));
            }
        }
    }

    /// <summary>Evicts the <paramref name="count"/> slow connections quiet longest (all, if fewer are slow), passing over
    /// those whose input has arrived unread: a connection the server has not served yet has read nothing and looks the
    /// quietest, though its request is there.</summary>
    private void EvictQuietest(int count)
    {
        if (count < _slow.Count)
        {
            _slow.Sort(static (a, b) => a.LastActivity.CompareTo(b.LastActivity));
        }

        for (int i = 0, evicted = 0; i < _slow.Count && evicted < count; i++)
        {
            SocketConnection connection = _slow[i].Connection;
            if (!connection.HasUnreadInput)
            {
                connection.Evict();
                evicted++;
            }
        }
    }
}
