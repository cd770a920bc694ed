namespace SocketServers.Internal;

/// <summary>
/// A connection's data rate (received and sent) over fixed windows, for <see cref="TcpServerOptions.MinDataRate"/>: the current
/// window's start, and whether the last complete window was below the minimum rate.
/// </summary>
/// <remarks>Read and moved by the sweep alone (<see cref="IdleAndSlowConnectionSweep"/>), so it needs no
/// synchronisation; the byte count it is given is the connection's, read with <see cref="Volatile"/>.</remarks>
internal struct DataRateWindow
{
    private long _windowStart;
    private long _windowStartBytes;
    private bool _lastWindowSlow;

    // Until the first window ends, the connection is judged over its whole life.
    private bool _inFirstWindow;

    /// <summary>Starts the first window at <paramref name="now"/>, with nothing received.</summary>
    /// <param name="now">The sweep's clock, in milliseconds, when the connection opened.</param>
    public DataRateWindow(long now)
    {
        _windowStart = now;
        _inFirstWindow = true;
    }

    /// <summary>Judges the connection from <paramref name="now"/> on as a new one, with <paramref name="bytes"/> moved so far.</summary>
    public void Restart(long now, long bytes) => this = new DataRateWindow(now) { _windowStartBytes = bytes };

    /// <summary>
    /// Closes the current window if <paramref name="windowMs"/> has passed, and says whether the connection received
    /// less than <paramref name="minDataRate"/> bytes a second both over the last complete window and since it ended;
    /// or, in its first window, since it opened (or was restarted), once it is <paramref name="judgedAfterMs"/> old.
    /// </summary>
    /// <remarks>The second condition is what the connection does now: one that was quiet for a window and streams
    /// since is not slow, however its last window went. A young connection is judged before its first window ends, so
    /// that slow clients queued behind slow ones take a slot for a fraction of a window each, not a whole one.</remarks>
    /// <param name="now">The sweep's clock now, in milliseconds.</param>
    /// <param name="bytes">The bytes the connection has received and sent so far.</param>
    /// <param name="windowMs">The window's length, in milliseconds.</param>
    /// <param name="minDataRate">The minimum rate, in bytes a second.</param>
    /// <param name="judgedAfterMs">How old a connection must be before it can be slow, in milliseconds.</param>
    /// <returns>Whether the connection is slow.</returns>
    public bool IsSlow(long now, long bytes, long windowMs, int minDataRate, long judgedAfterMs)
    {
        long elapsed = now - _windowStart;
        if (elapsed >= windowMs)
        {
            _lastWindowSlow = (bytes - _windowStartBytes) * 1000 < (long)minDataRate * elapsed;
            _windowStart = now;
            _windowStartBytes = bytes;
            _inFirstWindow = false;
            elapsed = 0;
        }

        if (_inFirstWindow)
        {
            return elapsed >= judgedAfterMs && (bytes - _windowStartBytes) * 1000 < (long)minDataRate * elapsed;
        }

        // Over at least a millisecond: a window that has just begun has received nothing yet.
        return _lastWindowSlow && (bytes - _windowStartBytes) * 1000 < (long)minDataRate * Math.Max(elapsed, 1);
    }
}
