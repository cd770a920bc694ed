using System.Diagnostics;
using System.Globalization;

namespace SocketServers.Internal;

/// <summary>Lets through at most a few log lines of one kind per time window and counts the others, so that a flood
/// of per-datagram or per-connection warnings costs a few lines a second instead of one line each.</summary>
/// <remarks>
/// One instance per kind of line: call <see cref="TryAcquire"/> after the logger's level check, log only when it returns
/// <see langword="true"/>, and end the line with <see cref="SuppressedNote"/> of the count it reports. Algorithm,
/// lock-free: one CompareExchange on <see cref="_window"/> opens a window or takes a line in it; a refused call only
/// increments <see cref="_suppressed"/>. Guarantees: at most <see cref="_linesPerWindow"/> lines per window; every
/// refused call is reported once, by a later line let through. Not guaranteed: which concurrent caller gets a window's
/// last line. A failed CompareExchange means another caller's succeeded (lock-free, not wait-free). Thread-safe.
/// </remarks>
internal sealed class LogRateLimiter
{
    /// <summary>The most lines a window may let through.</summary>
    public const int MaxLinesPerWindow = (1 << CountBits) - 1;

    /// <summary>Lines a second that <see cref="LogRateLimiter()"/> lets through: a few, so that a flood still
    /// shows in the log, with its size, without filling it.</summary>
    public const int DefaultLinesPerSecond = 3;

    private const int CountBits = 16;
    private const long CountMask = MaxLinesPerWindow;

    // The clock's value must fit in the bits above the count, as any real uptime in milliseconds does.
    private const long MaxClock = long.MaxValue >> CountBits;

    private readonly int _linesPerWindow;
    private readonly long _windowMilliseconds;

    private readonly MillisecondClock _clock;

    // (window start << CountBits) | lines let through in that window. Invariant: the count is at most
    // _linesPerWindow; it only grows by CompareExchange within one window, and a new window starts at 1, now, at the
    // first call that finds the last one over: a window's length or more after it, so a long flood gets at most
    // _linesPerWindow lines per window's length.
    private long _window;

    // Calls refused since the last line let through took the count; only incremented, and taken with Exchange.
    private long _suppressed;

    /// <summary>Creates a limiter that lets through <see cref="DefaultLinesPerSecond"/> lines a second.</summary>
    public LogRateLimiter()
        : this(DefaultLinesPerSecond, TimeSpan.FromSeconds(1))
    {
    }

    /// <summary>Creates a limiter that lets through <paramref name="linesPerWindow"/> lines per
    /// <paramref name="window"/>.</summary>
    /// <param name="linesPerWindow">Lines let through per window, 1 to <see cref="MaxLinesPerWindow"/>.</param>
    /// <param name="window">The window's length, at least a millisecond (whole milliseconds count).</param>
    /// <param name="clock">The clock; <see langword="null"/> for the system's. Tests pass a clock they move by hand.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="linesPerWindow"/> or
    /// <paramref name="window"/> is out of range.</exception>
    public LogRateLimiter(int linesPerWindow, TimeSpan window, MillisecondClock? clock = null)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(linesPerWindow, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(linesPerWindow, MaxLinesPerWindow);
        ArgumentOutOfRangeException.ThrowIfLessThan(window, TimeSpan.FromMilliseconds(1));
        _linesPerWindow = linesPerWindow;
        _windowMilliseconds = (long)window.TotalMilliseconds;
        _clock = clock ?? MillisecondClock.System;
    }

    /// <summary>The text that ends a line let through: empty when nothing was suppressed before it, else how
    /// many similar lines were.</summary>
    /// <param name="suppressed">The count <see cref="TryAcquire"/> reported.</param>
    /// <returns>A note that starts with a space, or the empty string.</returns>
    public static string SuppressedNote(long suppressed) => suppressed == 0
        ? string.Empty
        : string.Create(CultureInfo.InvariantCulture, $" ({suppressed} similar suppressed since the last one)");

    /// <summary>Decides whether a line may be logged now.</summary>
    /// <param name="suppressed">When the line may be logged, how many calls were refused since the last line let
    /// through; otherwise 0.</param>
    /// <returns>Whether to log the line; a refused call is counted instead.</returns>
    public bool TryAcquire(out long suppressed)
    {
        long now = _clock.Now;
        Debug.Assert(now is >= 0 and <= MaxClock, "The clock counts milliseconds from 0 and fits above the count.");
        long window = Volatile.Read(ref _window);
        while (true)
        {
            long next;

            // A clock read before another caller opened a later window reads as inside that window.
            if (now - (window >> CountBits) >= _windowMilliseconds)
            {
                next = (now << CountBits) | 1;
            }
            else if ((window & CountMask) < _linesPerWindow)
            {
                next = window + 1;
            }
            else
            {
                // The window is full: the flood's common case, one increment and nothing allocated.
                Interlocked.Increment(ref _suppressed);
                suppressed = 0;
                return false;
            }

            Debug.Assert((next & CountMask) <= _linesPerWindow, "A window never lets through more than its lines.");
            long seen = Interlocked.CompareExchange(ref _window, next, window);
            if (seen == window)
            {
                suppressed = Interlocked.Exchange(ref _suppressed, 0);
                return true;
            }

            window = seen;
        }
    }
}
