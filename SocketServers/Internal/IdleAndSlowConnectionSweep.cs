using System.Collections.Concurrent;

namespace SocketServers.Internal;

/// <summary>
/// A TCP server's open connections, and the one periodic sweep over them: it closes connections idle for
/// <see cref="TcpEchoServerOptions.IdleTimeout"/>, and, while every connection is taken and a client waits in the
/// backlog, evicts the quietest of those below <see cref="TcpEchoServerOptions.MinDataRate"/>. No timer per connection,
/// and nothing per message but a timestamp and a byte count.
/// </summary>
/// <remarks>Thread safety: <see cref="Add"/>, <see cref="Remove"/> and <see cref="ForEach"/> may be called from any
/// thread; <see cref="RunAsync"/> runs once at a time, and alone reads and moves each connection's rate window.</remarks>
internal sealed class IdleAndSlowConnectionSweep
{
    // Every open connection; added by the accept loop before the connection runs, removed when it has closed.
    private readonly ConcurrentDictionary<TcpConnection, byte> _connections = new();
    private readonly TimeSpan _idleTimeout;
    private readonly int _minDataRate;
    private readonly TimeSpan _slowConnectionWindow;
    private readonly Action? _beforeSweep;

    /// <summary>Creates the registry and the sweep's settings.</summary>
    /// <param name="idleTimeout">How long a connection may neither receive nor send; <see cref="Timeout.InfiniteTimeSpan"/> for ever.</param>
    /// <param name="minDataRate">Bytes a second below which a connection is slow; 0 never evicts.</param>
    /// <param name="slowConnectionWindow">The window over which the rate is measured.</param>
    /// <param name="beforeSweep">A test's fault, run at the start of each sweep; <see langword="null"/> for none.</param>
    public IdleAndSlowConnectionSweep(TimeSpan idleTimeout, int minDataRate, TimeSpan slowConnectionWindow, Action? beforeSweep)
    {
        _idleTimeout = idleTimeout;
        _minDataRate = minDataRate;
        _slowConnectionWindow = slowConnectionWindow;
        _beforeSweep = beforeSweep;
    }

    /// <summary>Gets whether the settings ask for a sweep at all: an idle timeout, or a minimum data rate.</summary>
    public bool IsNeeded => _idleTimeout != Timeout.InfiniteTimeSpan || _minDataRate > 0;

    /// <summary>Registers a connection before it runs.</summary>
    public void Add(TcpConnection connection) => _connections.TryAdd(connection, 0);

    /// <summary>Forgets a connection that has closed.</summary>
    public void Remove(TcpConnection connection) => _connections.TryRemove(connection, out _);

    /// <summary>Runs <paramref name="action"/> on every connection open now (one added or removed meanwhile may or may not be seen).</summary>
    public void ForEach(Action<TcpConnection> action)
    {
        foreach (var (connection, _) in _connections)
        {
            action(connection);
        }
    }

    /// <summary>Sweeps periodically until <paramref name="stopping"/> is cancelled.</summary>
    /// <param name="isFullWithClientWaiting">Whether every connection is taken and a client waits in the listen backlog.</param>
    /// <param name="stopping">The server's stopping token.</param>
    /// <returns>A task that completes when the server stops.</returns>
    /// <exception cref="Exception">Anything unexpected.</exception>
    public async Task RunAsync(Func<bool> isFullWithClientWaiting, CancellationToken stopping)
    {
        bool closesIdle = _idleTimeout != Timeout.InfiniteTimeSpan;
        long period = closesIdle
            ? Math.Clamp(_idleTimeout.Ticks / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond)
            : TimeSpan.TicksPerSecond;
        if (_minDataRate > 0)
        {
            // Often enough that a waiting client is served within a window and a little.
            period = Math.Min(period, Math.Max(TimeSpan.TicksPerMillisecond, _slowConnectionWindow.Ticks / 4));
        }

        long timeoutMs = closesIdle ? (long)_idleTimeout.TotalMilliseconds : long.MaxValue;
        long windowMs = (long)_slowConnectionWindow.TotalMilliseconds;
        try
        {
            using var timer = new PeriodicTimer(TimeSpan.FromTicks(period));
            while (await timer.WaitForNextTickAsync(stopping).ConfigureAwait(false))
            {
                _beforeSweep?.Invoke();
                if (SweepOnce(timeoutMs, windowMs) is { } quietestSlow && isFullWithClientWaiting())
                {
                    quietestSlow.Evict();
                }
            }
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
    }

    /// <summary>Closes the connections idle for <paramref name="timeoutMs"/> and finds the quietest slow one.</summary>
    /// <returns>The slow connection whose last activity is oldest; <see langword="null"/> when none is slow.</returns>
    private TcpConnection? SweepOnce(long timeoutMs, long windowMs)
    {
        long now = Environment.TickCount64;
        TcpConnection? quietestSlow = null;
        foreach (var (connection, _) in _connections)
        {
            long lastActivity = connection.LastActivity;
            if (now - lastActivity >= timeoutMs)
            {
                connection.CloseIdle();
            }
            else if (_minDataRate > 0 && connection.IsSlow(now, windowMs, _minDataRate)
                && (quietestSlow is null || lastActivity < quietestSlow.LastActivity))
            {
                quietestSlow = connection;
            }
        }

        return quietestSlow;
    }
}
