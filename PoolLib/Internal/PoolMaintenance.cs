using System.Diagnostics;

namespace PoolLib.Internal;

/// <summary>
/// What a pool's time-based options need: per-object history, and a timer that retires objects past
/// <see cref="PoolOptions.MaxObjectLifetime"/>, trims those idle past <see cref="PoolOptions.IdleTimeout"/>
/// and reports rentals held past <see cref="PoolOptions.LeakDetectionThreshold"/>. A pool makes one
/// only when one of those options is on; the timer holds it, and it holds the pool weakly, so that a
/// pool its user forgot to dispose can still be collected.
/// </summary>
internal sealed class PoolMaintenance<T> : IDisposable where T : class
{
    // The longest period a timer accepts: uint.MaxValue - 1 milliseconds, about 49.7 days.
    private const long MaxTimerPeriodTicks = (uint.MaxValue - 1L) * TimeSpan.TicksPerMillisecond;

    private readonly WeakReference<Pool<T>> _pool;
    private readonly TimeProvider _time;

    // In TimeProvider timestamp units; 0 where the option is off.
    private readonly long _maxObjectLifetime;
    private readonly long _idleTimeout;
    private readonly long _leakThreshold;

    private readonly ITimer _timer;

    // 1 while a sweep runs, so that a slow sweep and the next tick never overlap.
    private int _sweeping;

    private PoolMaintenance(Pool<T> pool, PoolOptions options, TimeSpan period)
    {
        _pool = new WeakReference<Pool<T>>(pool);
        _time = options.TimeProvider ?? TimeProvider.System;
        _maxObjectLifetime = Timestamps(options.MaxObjectLifetime);
        _idleTimeout = Timestamps(options.IdleTimeout);
        _leakThreshold = Timestamps(options.LeakDetectionThreshold);

        // Captures no execution context, so that the timer keeps nothing of its creator alive.
        AsyncFlowControl? suppressed = ExecutionContext.IsFlowSuppressed() ? null : ExecutionContext.SuppressFlow();
        try
        {
            _timer = _time.CreateTimer(static state => ((PoolMaintenance<T>)state!).Sweep(), this, period, period);
        }
        finally
        {
            suppressed?.Undo();
        }
    }

    /// <summary>Gets whether each take records when (and where) its rental began.</summary>
    public bool TracksRentals => _leakThreshold != 0;

    /// <summary>Gets whether each release resets its object's idle time.</summary>
    public bool TracksIdleTime => _idleTimeout != 0;

    /// <summary>Makes the maintenance an option of <paramref name="options"/> needs, or returns <see langword="null"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">A time span is zero or negative; the parameter name names the option.</exception>
    public static PoolMaintenance<T>? Create(Pool<T> pool, PoolOptions options)
    {
        TimeSpan? shortest = null;
        foreach ((TimeSpan? option, string name) in (ReadOnlySpan<(TimeSpan?, string)>)[
            (options.IdleTimeout, nameof(PoolOptions.IdleTimeout)),
            (options.LeakDetectionThreshold, nameof(PoolOptions.LeakDetectionThreshold)),
            (options.MaxObjectLifetime, nameof(PoolOptions.MaxObjectLifetime))])
        {
            if (option is { } span)
            {
                ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(span, TimeSpan.Zero, $"options.{name}");
                shortest = shortest is null || span < shortest ? span : shortest;
            }
        }

        return shortest is { } period
            ? new PoolMaintenance<T>(pool, options, TimeSpan.FromTicks(Math.Clamp(period.Ticks / 4, TimeSpan.TicksPerMillisecond, MaxTimerPeriodTicks)))
            : null;
    }

    /// <summary>What a new object's slot tracks.</summary>
    public SlotHistory NewHistory() => new(_time.GetTimestamp());

    /// <summary>Starts a tracked rental: when it began and where.</summary>
    public void BeginRental(PoolSlot<T> slot)
    {
        // Only the taker writes these; the number last, so that a sweep that reads it before and after
        // the others and sees it unchanged read one rental's time and trace.
        SlotHistory history = slot.History!;
        Volatile.Write(ref history.TakenAt, new StackTrace(2, fNeedFileInfo: false));
        Volatile.Write(ref history.RentedAt, _time.GetTimestamp());
        Volatile.Write(ref history.RentalNumber, history.RentalNumber + 1);
    }

    public void Dispose() => _timer.Dispose();

    /// <summary>
    /// One tick: retires objects past their lifetime, stamps idle objects with the time they were first
    /// seen idle, trims those idle too long (down to <see cref="PoolOptions.MinIdle"/>), reports leaks.
    /// Allocates nothing unless it finds an object to trim or a rental to report.
    /// </summary>
    public void Sweep()
    {
        if (!_pool.TryGetTarget(out Pool<T>? pool))
        {
            _timer.Dispose();
            return;
        }

        if (Interlocked.Exchange(ref _sweeping, 1) != 0)
        {
            return;
        }

        try
        {
            long now = _time.GetTimestamp();
            bool idleRetired = false;
            bool idleTooLong = false;
            foreach (PoolSlot<T>? slot in pool.Slots)
            {
                if (slot?.History is not { } history)
                {
                    continue;
                }

                if (_maxObjectLifetime != 0 && now - history.CreatedAt >= _maxObjectLifetime)
                {
                    slot.Retire();
                }

                if (slot.IsIdle)
                {
                    idleRetired |= slot.IsRetired;
                    idleTooLong |= _idleTimeout != 0 && IsIdleTooLong(history, now);
                }
                else if (_leakThreshold != 0 && slot.IsRented)
                {
                    ReportIfLeaked(pool, slot, history, now);
                }
            }

            pool.DiscardIdleInMaintenance(retiredOnly: idleRetired, idleSince: idleTooLong ? now - _idleTimeout : null);
        }
        finally
        {
            Volatile.Write(ref _sweeping, 0);
        }
    }

    /// <summary>Stamps an idle slot first seen idle now; says whether it has been idle longer than the idle timeout.</summary>
    private bool IsIdleTooLong(SlotHistory history, long now)
    {
        long idleSince = Volatile.Read(ref history.IdleSince);
        if (idleSince == 0)
        {
            // A release that races this stamp clears it again: idle from then.
            Volatile.Write(ref history.IdleSince, now);
            return false;
        }

        return now - idleSince >= _idleTimeout;
    }

    /// <summary>Reports a rental held longer than the threshold and not yet reported.</summary>
    private void ReportIfLeaked(Pool<T> pool, PoolSlot<T> slot, SlotHistory history, long now)
    {
        long rental = Volatile.Read(ref history.RentalNumber);
        long rentedAt = Volatile.Read(ref history.RentedAt);
        StackTrace? takenAt = Volatile.Read(ref history.TakenAt);
        if (rental == 0 || takenAt is null || now - rentedAt < _leakThreshold || Volatile.Read(ref history.LeakReportedFor) == rental)
        {
            return;
        }

        Volatile.Write(ref history.LeakReportedFor, rental);

        // The slot may have gone back (and out again) since these reads: report only if not.
        if (slot.IsRented && Volatile.Read(ref history.RentalNumber) == rental)
        {
            pool.ReportLeak(new PoolLeakEventArgs(pool.Name, _time.GetElapsedTime(rentedAt, now), takenAt));
        }
    }

    /// <summary>Converts an optional time span option to timestamp units; 0 when it is off.</summary>
    private long Timestamps(TimeSpan? option)
    {
        if (option is not { } span)
        {
            return 0;
        }

        // Spans too long for the clock's units (TimeSpan.MaxValue among them) mean "never" in practice.
        double timestamps = span.TotalSeconds * _time.TimestampFrequency;
        return timestamps >= long.MaxValue ? long.MaxValue : Math.Max(1, (long)timestamps);
    }
}
