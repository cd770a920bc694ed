using System.Diagnostics;

namespace PoolLib.Internal;

/// <summary>
/// What a pool's time-based options need: per-object history, and a timer that retires objects past
/// their lifetime, trims those idle too long, reports rentals held past the leak threshold (and their
/// return), and takes back abandoned ones. A take pays for none of it: the timer notes when it first
/// sees each rental. A pool makes one only when such an option is on; the timer holds it, and it holds
/// the pool weakly, so that a pool its user forgot to dispose can still be collected.
/// </summary>
internal sealed class PoolMaintenance<T> : IDisposable where T : class
{
    // The longest period a timer accepts: uint.MaxValue - 1 milliseconds, about 49.7 days.
    private const long MaxTimerPeriodTicks = (uint.MaxValue - 1L) * TimeSpan.TicksPerMillisecond;

    private readonly WeakReference<Pool<T>> _pool;
    private readonly TimeProvider _time;

    // In TimeProvider timestamp units; 0 where the option is off.
    private readonly long _maxObjectLifetime;

    // An object's lifetime runs from the latest (the option less one sweep period, so that the sweep that retires it
    // comes before the option ends) down by up to the spread, a quarter of the option, which is four periods at least:
    // objects made together expire over four sweeps instead of at one.
    private readonly long _latestExpiry;
    private readonly long _expirySpread;
    private readonly long _idleTimeout;
    private readonly long _leakThreshold;
    private readonly long _abandonedTimeout;

    private readonly ITimer _timer;

    // 1 while a sweep runs, so that a slow sweep and the next tick never overlap.
    private int _sweeping;

    // Rentals reported as leaks and not yet seen back; touched by sweeps only.
    private readonly List<ReportedLeak> _reported = [];

    // The leak events sweeps found, raised in order after each sweep, so that a handler that blocks holds up no sweep.
    private readonly SerialQueue<LeakEvent> _leakEvents = new(static leak => RaiseLeakEvent(leak.Pool, leak.Args, leak.Returned));

    private PoolMaintenance(Pool<T> pool, PoolOptions options, TimeSpan period)
    {
        _pool = new WeakReference<Pool<T>>(pool);
        _time = options.TimeProvider ?? TimeProvider.System;
        _maxObjectLifetime = Timestamps(options.MaxObjectLifetime);
        _idleTimeout = Timestamps(options.IdleTimeout);
        _leakThreshold = Timestamps(options.LeakDetectionThreshold);
        _abandonedTimeout = Timestamps(options.AbandonedRentalTimeout);
        _latestExpiry = _maxObjectLifetime == long.MaxValue ? long.MaxValue : Math.Max(0, _maxObjectLifetime - Timestamps(period));
        _expirySpread = _latestExpiry == long.MaxValue ? 0 : _maxObjectLifetime / 4;

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

    /// <summary>Gets whether each release resets its object's idle time.</summary>
    public bool TracksIdleTime => _idleTimeout != 0;

    /// <summary>Makes the maintenance the options (already validated) need, or returns <see langword="null"/>.</summary>
    public static PoolMaintenance<T>? Create(Pool<T> pool, PoolOptions options)
    {
        TimeSpan? shortest = null;
        foreach ((TimeSpan? option, _) in options.TimeSpans)
        {
            shortest = option is { } span && (shortest is null || span < shortest) ? span : shortest;
        }

        if (shortest is not { } shortestSpan)
        {
            return null;
        }

        // A quarter of the shortest span; and a sixteenth of the lifetime, so that its spread of a quarter covers four ticks.
        long period = Math.Min(shortestSpan.Ticks / 4, (options.MaxObjectLifetime?.Ticks ?? long.MaxValue) / 16);
        return new PoolMaintenance<T>(pool, options, TimeSpan.FromTicks(Math.Clamp(period, TimeSpan.TicksPerMillisecond, MaxTimerPeriodTicks)));
    }

    /// <summary>What a new object's slot tracks.</summary>
    public SlotHistory NewHistory()
    {
        long now = _time.GetTimestamp();
        if (_maxObjectLifetime == 0 || _latestExpiry == long.MaxValue)
        {
            return new SlotHistory(now);
        }

        long lifetime = Math.Max(0, _latestExpiry - (long)(Random.Shared.NextDouble() * _expirySpread));
        return new SlotHistory(now, now + lifetime);
    }

    /// <summary>Records where and when a sampled rental began; called by its taker.</summary>
    public void RecordTrace(PoolSlot<T> slot, StackTrace trace)
    {
        SlotHistory history = slot.History!;
        Volatile.Write(ref history.TracedRental, -1);
        Volatile.Write(ref history.TakenAt, trace);
        Volatile.Write(ref history.TracedAt, _time.GetTimestamp());
        Volatile.Write(ref history.TracedRental, slot.Rental);
    }

    public void Dispose() => _timer.Dispose();

    /// <summary>
    /// One tick: retires objects past their lifetime, stamps idle objects with the time they were first
    /// seen idle and rentals with the time they were first seen, takes back abandoned rentals, finds leaks
    /// and their return; then, no longer sweeping, runs the user code that owes: the Dispose of objects taken
    /// back or idle too long (trimmed down to <see cref="PoolOptions.MinIdle"/>), and the leak events.
    /// Allocates nothing unless it finds an object to trim or a rental to report or take back.
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

        long now = _time.GetTimestamp();
        bool idleRetired = false;
        bool idleTooLong = false;
        List<PoolSlot<T>>? takenBack = null;
        try
        {
            bool watchesRentals = (_leakThreshold | _abandonedTimeout) != 0;
            foreach (PoolSlot<T>? slot in pool.Registry.Slots)
            {
                if (slot?.History is not { } history)
                {
                    continue;
                }

                if (now >= history.ExpiresAt)
                {
                    slot.Retire();
                }

                if (slot.IsIdle)
                {
                    idleRetired |= slot.IsRetired;
                    idleTooLong |= _idleTimeout != 0 && IsIdleTooLong(history, now);
                }
                else if (watchesRentals && slot.RentedRental is var rental and >= 0)
                {
                    WatchRental(pool, slot, history, rental, now, ref takenBack);
                }
            }

            FindReturnedLeaks(pool, now);
        }
        finally
        {
            Volatile.Write(ref _sweeping, 0);
            if (takenBack is not null)
            {
                foreach (PoolSlot<T> slot in takenBack)
                {
                    DiscardTakenBack(pool, slot);
                }
            }
        }

        pool.Trimmer.DiscardInMaintenance(retiredOnly: idleRetired, idleSince: idleTooLong ? now - _idleTimeout : null);

        _leakEvents.RunPending();
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

    /// <summary>Takes a rental back if it is abandoned (its object for the caller to discard), or reports it once if it is held past the leak threshold.</summary>
    private void WatchRental(Pool<T> pool, PoolSlot<T> slot, SlotHistory history, int rental, long now, ref List<PoolSlot<T>>? takenBack)
    {
        if (history.SeenRental != rental)
        {
            history.SeenRental = rental;
            history.SeenRentedAt = now;
        }

        long rentedAt = TryReadTrace(history, rental, out long tracedAt, out StackTrace? trace) ? tracedAt : history.SeenRentedAt;
        if (_abandonedTimeout != 0 && now - rentedAt >= _abandonedTimeout && TryTakeBackAbandoned(slot, rental))
        {
            (takenBack ??= []).Add(slot);
            return;
        }

        if (_leakThreshold == 0 || now - rentedAt < _leakThreshold || history.LeakReportedFor == rental)
        {
            return;
        }

        // Still rented when read above: held past the threshold, whenever it comes back.
        history.LeakReportedFor = rental;
        _reported.Add(new ReportedLeak(slot, rental, rentedAt, trace));
        _leakEvents.Add(new LeakEvent(pool, new PoolLeakEventArgs(pool.Name, _time.GetElapsedTime(rentedAt, now), trace), Returned: false));
    }

    /// <summary>Finds, once each, the reported rentals that have come back since the last sweep; not those taken back as abandoned.</summary>
    private void FindReturnedLeaks(Pool<T> pool, long now)
    {
        for (int i = _reported.Count - 1; i >= 0; i--)
        {
            ReportedLeak leak = _reported[i];
            if (leak.Slot.RentedRental == leak.Rental)
            {
                continue;
            }

            _reported.RemoveAt(i);
            if (!leak.Slot.WasTakenBack(leak.Rental))
            {
                _leakEvents.Add(new LeakEvent(pool, new PoolLeakEventArgs(pool.Name, _time.GetElapsedTime(leak.RentedAt, now), leak.Trace), Returned: true));
            }
        }
    }

    /// <summary>Reads where and when rental <paramref name="rental"/> began, if it was the one sampled last.</summary>
    private static bool TryReadTrace(SlotHistory history, int rental, out long tracedAt, out StackTrace? trace)
    {
        tracedAt = 0;
        trace = null;
        if (Volatile.Read(ref history.TracedRental) != rental)
        {
            return false;
        }

        tracedAt = Volatile.Read(ref history.TracedAt);
        trace = Volatile.Read(ref history.TakenAt);
        if (Volatile.Read(ref history.TracedRental) == rental)
        {
            return true;
        }

        trace = null;
        return false;
    }

    /// <summary>Counts and raises the pool's leak event, or its leaked-rental-returned event, each handler in turn, dropping what they throw.</summary>
    private static void RaiseLeakEvent(Pool<T> pool, PoolLeakEventArgs args, bool returned)
    {
        if (returned)
        {
            PoolMetrics.LeakReturned(pool.Name);
        }
        else
        {
            PoolMetrics.LeakReported(pool.Name);
        }

        if (pool.LeakHandlers(returned) is not { } handlers)
        {
            return;
        }

        foreach (EventHandler<PoolLeakEventArgs> handler in Delegate.EnumerateInvocationList(handlers))
        {
            try
            {
                handler(pool, args);
            }
            catch (Exception)
            {
                // A handler's failure must not stop the timer, the process, or the handlers after it.
            }
        }
    }

    /// <summary>
    /// Takes back a rental held past the abandoned-rental timeout, if it is still rented in
    /// <paramref name="rental"/>; the caller then discards it with <see cref="DiscardTakenBack"/>.
    /// </summary>
    private static bool TryTakeBackAbandoned(PoolSlot<T> slot, int rental)
    {
        // This and the renter's release race for one compare-and-swap from (rented, rental). The claim is
        // marked in flight first, so a release that loses reads it after the state it lost to, and waits
        // for the outcome (see SlotHistory.TakenBackRental).
        SlotHistory history = slot.History!;
        Volatile.Write(ref history.AbandonedRental, SlotHistory.InFlight(rental));
        if (!slot.TryBeginReturn(rental))
        {
            Volatile.Write(ref history.AbandonedRental, -1);
            return false;
        }

        Volatile.Write(ref history.AbandonedRental, rental);
        return true;
    }

    /// <summary>Discards the object of a rental taken back as abandoned, and gives its unit of the cap to a waiter.</summary>
    private static void DiscardTakenBack(Pool<T> pool, PoolSlot<T> slot)
    {
        try
        {
            pool.Lifecycle.Discard(slot, PoolMetrics.DiscardReason.Abandoned);
        }
        catch (Exception)
        {
            // The object's Dispose failed; it is gone, and its unit is back, all the same.
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

    /// <summary>A rental reported as a leak: which, when it began, and where if it was sampled.</summary>
    private readonly record struct ReportedLeak(PoolSlot<T> Slot, int Rental, long RentedAt, StackTrace? Trace);

    /// <summary>A leak event to raise: a rental held past the threshold, or its return.</summary>
    private readonly record struct LeakEvent(Pool<T> Pool, PoolLeakEventArgs Args, bool Returned);
}
