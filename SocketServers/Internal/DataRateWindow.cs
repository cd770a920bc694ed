namespace SocketServers.Internal;

/// <summary>
/// A connection's receive rate over fixed windows, for <see cref="TcpEchoServerOptions.MinDataRate"/>: the current
/// window's start, and whether the last complete window was below the minimum rate.
/// </summary>
/// <remarks>Read and moved by the sweep alone (<see cref="IdleAndSlowConnectionSweep"/>), so it needs no
/// synchronisation; the byte count it is given is the connection's, read with <see cref="Volatile"/>.</remarks>
internal struct DataRateWindow
{
    private long _windowStart;
    private long _windowStartBytes;
    private bool _lastWindowSlow;

    /// <summary>Starts the first window at <paramref name="now"/>, with nothing received.</summary>
    /// <param name="now"><see cref="Environment.TickCount64"/> when the connection opened.</param>
    public DataRateWindow(long now) => _windowStart = now;

    /// <summary>
    /// Closes the current window if <paramref name="windowMs"/> has passed, and says whether the connection received
    /// less than <paramref name="minDataRate"/> bytes a second both over the last complete window and since it ended
    /// (a connection younger than one window never has).
    /// </summary>
    /// <remarks>The second condition is what the connection does now: one that was quiet for a window and streams
    /// since is not slow, however its last window went.</remarks>
    /// <param name="now"><see cref="Environment.TickCount64"/> now.</param>
    /// <param name="bytes">The bytes the connection has received so far.</param>
    /// <param name="windowMs">The window's length, in milliseconds.</param>
    /// <param name="minDataRate">The minimum rate, in bytes a second.</param>
    /// <returns>Whether the connection is slow.</returns>
    public bool IsSlow(long now, long bytes, long windowMs, int minDataRate)
    {
        long elapsed = now - _windowStart;
        if (elapsed >= windowMs)
        {
            _lastWindowSlow = (bytes - _windowStartBytes) * 1000 < (long)minDataRate * elapsed;
            _windowStart = now;
            _windowStartBytes = bytes;
            elapsed = 0;
        }

        // Over at least a millisecond: a window that has just begun has received nothing yet.
        return _lastWindowSlow && (bytes - _windowStartBytes) * 1000 < (long)minDataRate * Math.Max(elapsed, 1);
    }
}
