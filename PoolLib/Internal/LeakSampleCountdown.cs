using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// Which of one thread's takes record where they were taken, for leak detection: every Nth take with a fixed
/// interval, or, by default, an interval that adapts to how often the thread takes. Adaptively, a trace reads the
/// pool's clock before and after itself, and sets the takes until the next one so that the time between traces is
/// at least <see cref="TimeShare"/> times the trace's own: a thread that takes rarely traces every take, a busy one
/// spends about 1 % of its time tracing. Only the owner thread touches it (it lives in that thread's hints).
/// </summary>
internal struct LeakSampleCountdown
{
    /// <summary>The interval that stands for the adaptive default.</summary>
    public const int Adaptive = -1;

    // Tracing may take one part in this many of a thread's time: 1 %.
    private const int TimeShare = 100;

    // The most takes between two adaptive traces: bounds how many takes a thread that goes quiet after a burst makes
    // before its next trace notices.
    private const int MaxAdaptiveInterval = 1 << 16;

    // The fixed interval, or Adaptive.
    private readonly int _interval;

    // Takes left, the next one included, before one is traced; at most 0 when the next take is due.
    private int _remaining;

    // Adaptively, the takes from the last trace to the next; 0 before the thread's first trace.
    private int _window;

    // Adaptively, the pool's clock when the last trace ended.
    private long _lastTraceEnd;

    /// <param name="interval">One take in this many is traced, the first being the thread's take number <paramref name="interval"/>; or <see cref="Adaptive"/>, which traces the first.</param>
    public LeakSampleCountdown(int interval)
    {
        Debug.Assert(interval > 0 || interval == Adaptive);
        _interval = interval;
        _remaining = interval == Adaptive ? 1 : interval;
    }

    /// <summary>Counts a take on the fast path; true when it is due, which only the slow path traces (without counting it again).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool CountDown() => --_remaining <= 0;

    /// <summary>Counts a take on the slow path, unless the fast path counted it, and traces it if it is due.</summary>
    /// <param name="time">The pool's clock, read only when a trace is taken, and only adaptively.</param>
    /// <returns>Where the take began, or <see langword="null"/> if it is not traced.</returns>
    public StackTrace? Sample(TimeProvider time)
    {
        if (_remaining > 0 && --_remaining > 0)
        {
            return null;
        }

        if (_interval != Adaptive)
        {
            _remaining = _interval;
            return CallerStackTrace.Capture();
        }

        long start = time.GetTimestamp();
        StackTrace trace = CallerStackTrace.Capture();
        long end = time.GetTimestamp();
        _remaining = _window = NextWindow(start, end);
        _lastTraceEnd = end;
        return trace;
    }

    /// <summary>
    /// The takes until the next trace: as many as the thread made, at the rate it made them since the last trace,
    /// in <see cref="TimeShare"/> times what this trace cost; at least 1, so a thread that took rarely traces its next take.
    /// </summary>
    private readonly int NextWindow(long start, long end)
    {
        long cost = end - start;
        long between = start - _lastTraceEnd;
        if (_window == 0 || cost <= 0)
        {
            // The first trace, whose rate is unknown yet; or one the clock did not see, which costs nothing then.
            return 1;
        }

        if (between <= 0)
        {
            return MaxAdaptiveInterval;
        }

        double takes = Math.Ceiling((double)_window * TimeShare * cost / between);
        return takes >= MaxAdaptiveInterval ? MaxAdaptiveInterval : Math.Max(1, (int)takes);
    }
}
