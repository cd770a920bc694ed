using System.Diagnostics;
using System.Runtime.CompilerServices;
using PoolLib.Internal;

namespace PoolLib;

// The options' features: validation and leak tracking on take, idle time on release, and the
// maintenance timer that retires old objects, trims idle ones and reports leaks; Trim and Clear.
// None of it costs a take or release anything while its option is off.
public abstract partial class Pool<T>
{
    // The longest period a timer accepts: uint.MaxValue - 1 milliseconds, about 49.7 days.
    private const long MaxTimerPeriodTicks = (uint.MaxValue - 1L) * TimeSpan.TicksPerMillisecond;

    private TimeProvider _timeProvider = TimeProvider.System;

    // In TimeProvider timestamp units; 0 where the option is off.
    private long _maxObjectLifetime;
    private long _idleTimeout;
    private long _leakDetectionThreshold;
    private int _minIdle;

    // The idle sweep, the lifetime sweep and the leak scan, on one timer per pool; null when no option needs it.
    private ITimer? _maintenanceTimer;

    // 1 while a sweep runs, so that a slow sweep and the next tick never overlap.
    private int _sweeping;

    // How many times Clear has begun; an object made while it changed is retired (see CreateSlot).
    private int _clears;

    /// <summary>
    /// Raised, once per rental, when an object has been rented for longer than
    /// <see cref="PoolOptions.LeakDetectionThreshold"/>; never raised while that option is off.
    /// </summary>
    /// <remarks>
    /// Raised on a timer thread, a little after the threshold passes (within a quarter of the
    /// shortest of <see cref="PoolOptions.LeakDetectionThreshold"/> and <see cref="PoolOptions.IdleTimeout"/>).
    /// The rental goes on: the pool only reports it. An exception thrown by a handler is caught and
    /// dropped, so that the pool's timer and the other handlers keep running.
    /// </remarks>
    public event EventHandler<PoolLeakEventArgs>? RentalLeakSuspected;

    /// <summary>Disposes idle objects down to <see cref="PoolOptions.MinIdle"/>.</summary>
    /// <returns>How many idle objects were disposed.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <exception cref="AggregateException">Several objects threw from their <see cref="IDisposable.Dispose"/>.</exception>
    /// <remarks>
    /// Objects that a thread keeps for its next take count as idle. Rented objects are not touched,
    /// and a take that runs meanwhile may take an idle object first. Every object to dispose is
    /// disposed even if some throw; then the one exception is rethrown as it is, or several in an
    /// <see cref="AggregateException"/>.
    /// </remarks>
    public int Trim()
    {
        ThrowIfDisposed();
        int trimmed = TrimIdle(idleSince: null, out List<Exception>? failures);
        if (failures is not null)
        {
            ThrowDisposeFailures(failures);
        }

        return trimmed;
    }

    /// <summary>
    /// Disposes every idle object now, and every rented one when it is released, so that from now on
    /// takers get only objects made after this call.
    /// </summary>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <exception cref="AggregateException">Several idle objects threw from their <see cref="IDisposable.Dispose"/>.</exception>
    /// <remarks>
    /// For objects that all went bad at once, such as connections to a server that restarted.
    /// <see cref="PoolOptions.MinIdle"/> does not apply. An object made before this call is never
    /// handed out after it: one that a concurrent release makes idle is disposed when a taker finds it.
    /// </remarks>
    public void Clear()
    {
        ThrowIfDisposed();
        Interlocked.Increment(ref _clears);
        foreach (PoolSlot<T>? slot in _storage.Registered)
        {
            slot?.Retire();
        }

        DiscardIdle(PoolMetrics.DiscardReason.Trimmed, retiredOnly: true);
    }

    /// <summary>Converts the time-based options to timestamps; called once, by the constructor.</summary>
    private void InitialiseOptions(PoolOptions options)
    {
        _timeProvider = options.TimeProvider ?? TimeProvider.System;
        _maxObjectLifetime = Timestamps(options.MaxObjectLifetime, nameof(PoolOptions.MaxObjectLifetime));
        _idleTimeout = Timestamps(options.IdleTimeout, nameof(PoolOptions.IdleTimeout));
        _leakDetectionThreshold = Timestamps(options.LeakDetectionThreshold, nameof(PoolOptions.LeakDetectionThreshold));
        _minIdle = options.MinIdle;
    }

    /// <summary>Converts an optional time span option to <see cref="TimeProvider"/> timestamp units; 0 when it is off.</summary>
    private long Timestamps(TimeSpan? option, string optionName)
    {
        if (option is not { } span)
        {
            return 0;
        }

        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(span, TimeSpan.Zero, OptionName(optionName));

        // Spans too long for the clock's units (TimeSpan.MaxValue among them) mean "never" in practice.
        double timestamps = span.TotalSeconds * _timeProvider.TimestampFrequency;
        return timestamps >= long.MaxValue ? long.MaxValue : Math.Max(1, (long)timestamps);
    }

    /// <summary>What a new slot tracks for the time-based options; <see langword="null"/> while they are all off.</summary>
    private SlotHistory? NewHistory() =>
        (_maxObjectLifetime | _idleTimeout | _leakDetectionThreshold) != 0 ? new SlotHistory(_timeProvider.GetTimestamp()) : null;

    /// <summary>
    /// What a take owes beyond the fast path, for an idle slot just taken: validation (an invalid
    /// object is discarded, and this returns <see langword="false"/>) and leak tracking.
    /// </summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="keepBudgetIfInvalid">
    /// Whether an invalid object's place under the cap stays with the caller, who then makes a new
    /// object with it (a waiter that was handed the object), instead of going back to the pool.
    /// </param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool PassesTakeChecks(PoolSlot<T> slot, bool keepBudgetIfInvalid)
    {
        if ((_takeChecks & ValidateOnTake) != 0)
        {
            bool valid;
            try
            {
                valid = Validate(slot.Object);
            }
            catch (Exception failure)
            {
                DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.Invalid);
                throw;
            }

            if (!valid)
            {
                DiscardRefused(slot, PoolMetrics.DiscardReason.Invalid, keepBudgetIfInvalid);
                return false;
            }
        }

        if ((_takeChecks & TrackRentals) != 0)
        {
            BeginTrackedRental(slot);
        }

        return true;
    }

    /// <summary>Starts a tracked rental: when it began and where (leak detection).</summary>
    private void BeginTrackedRental(PoolSlot<T> slot)
    {
        // Only the taker writes these; the number last, so a scan that reads it before and after
        // the others and sees it unchanged read one rental's time and trace.
        SlotHistory history = slot.History!;
        Volatile.Write(ref history.TakenAt, new StackTrace(1, fNeedFileInfo: false));
        Volatile.Write(ref history.RentedAt, _timeProvider.GetTimestamp());
        Volatile.Write(ref history.RentalNumber, history.RentalNumber + 1);
    }

    /// <summary>Starts the maintenance timer if an option needs it.</summary>
    private void StartMaintenance(PoolOptions options)
    {
        TimeSpan? shortest = null;
        foreach (TimeSpan? option in (ReadOnlySpan<TimeSpan?>)[options.IdleTimeout, options.LeakDetectionThreshold, options.MaxObjectLifetime])
        {
            if (option is { } candidate && (shortest is null || candidate < shortest))
            {
                shortest = candidate;
            }
        }

        if (shortest is not { } span)
        {
            return;
        }

        TimeSpan period = TimeSpan.FromTicks(Math.Clamp(span.Ticks / 4, TimeSpan.TicksPerMillisecond, MaxTimerPeriodTicks));

        // The timer holds the pool weakly, so a pool its user forgot to dispose can still be
        // collected (its timer then stops itself); and it captures no execution context, so it keeps
        // nothing of its creator alive.
        var tick = new MaintenanceTick(this);
        AsyncFlowControl? suppressed = ExecutionContext.IsFlowSuppressed() ? null : ExecutionContext.SuppressFlow();
        try
        {
            _maintenanceTimer = tick.Timer = _timeProvider.CreateTimer(static state => ((MaintenanceTick)state!).Run(), tick, period, period);
        }
        finally
        {
            suppressed?.Undo();
        }
    }

    private void StopMaintenance() => _maintenanceTimer?.Dispose();

    /// <summary>
    /// One tick of the timer: retires objects older than <see cref="PoolOptions.MaxObjectLifetime"/>
    /// (a release then discards them, and idle ones are discarded here), stamps idle slots with the
    /// time they were first seen idle, trims those idle for longer than <see cref="PoolOptions.IdleTimeout"/>
    /// (down to <see cref="PoolOptions.MinIdle"/>), and reports rentals held longer than
    /// <see cref="PoolOptions.LeakDetectionThreshold"/>.
    /// </summary>
    /// <remarks>Allocates nothing unless it finds an object to trim or a rental to report. Internal for tests
    /// that drive time themselves.</remarks>
    internal void Maintain()
    {
        if (Volatile.Read(ref _disposed) != 0 || Interlocked.Exchange(ref _sweeping, 1) != 0)
        {
            return;
        }

        try
        {
            long now = _timeProvider.GetTimestamp();
            bool idleTooOld = false;
            bool idleTooLong = false;
            foreach (PoolSlot<T>? slot in _storage.Registered)
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
                    idleTooOld |= slot.IsRetired;
                    idleTooLong |= _idleTimeout != 0 && IsIdleTooLong(history, now);
                }
                else if (_leakDetectionThreshold != 0 && slot.IsRented)
                {
                    ReportIfLeaked(slot, history, now);
                }
            }

            // Failures of idle objects' Dispose have no caller to reach; the objects are gone either way.
            if (idleTooOld)
            {
                try
                {
                    DiscardIdle(PoolMetrics.DiscardReason.Expired, retiredOnly: true);
                }
                catch (Exception)
                {
                }
            }

            if (idleTooLong)
            {
                TrimIdle(idleSince: now - _idleTimeout, out _);
            }
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
            // A release that races this stamp clears it again (see ReleaseSlow): idle from then.
            Volatile.Write(ref history.IdleSince, now);
            return false;
        }

        return now - idleSince >= _idleTimeout;
    }

    /// <summary>Raises <see cref="RentalLeakSuspected"/> for a rental held longer than the threshold and not yet reported.</summary>
    private void ReportIfLeaked(PoolSlot<T> slot, SlotHistory history, long now)
    {
        long rental = Volatile.Read(ref history.RentalNumber);
        long rentedAt = Volatile.Read(ref history.RentedAt);
        StackTrace? takenAt = Volatile.Read(ref history.TakenAt);
        if (rental == 0 || takenAt is null || now - rentedAt < _leakDetectionThreshold || Volatile.Read(ref history.LeakReportedFor) == rental)
        {
            return;
        }

        Volatile.Write(ref history.LeakReportedFor, rental);

        // The slot may have gone back (and out again) since these reads: report only if not.
        if (!slot.IsRented || Volatile.Read(ref history.RentalNumber) != rental || RentalLeakSuspected is not { } handlers)
        {
            return;
        }

        var args = new PoolLeakEventArgs(_name, _timeProvider.GetElapsedTime(rentedAt, now), takenAt);
        foreach (EventHandler<PoolLeakEventArgs> handler in Delegate.EnumerateInvocationList(handlers))
        {
            try
            {
                handler(this, args);
            }
            catch (Exception)
            {
                // A handler's failure must not stop the timer, the process, or the handlers after it (see the event's remarks).
            }
        }
    }

    /// <summary>
    /// Disposes idle objects beyond <see cref="PoolOptions.MinIdle"/>, each taken first with a
    /// compare-and-swap, so that a concurrent take gets either the object or nothing.
    /// </summary>
    /// <param name="idleSince">
    /// Trim only objects the idle sweep has seen idle since this timestamp or earlier;
    /// <see langword="null"/> to trim any idle object.
    /// </param>
    /// <param name="failures">Exceptions from the objects' Dispose, if any threw.</param>
    /// <returns>How many objects were disposed.</returns>
    private int TrimIdle(long? idleSince, out List<Exception>? failures)
    {
        failures = null;
        int excess = AvailableCount - _minIdle;
        int trimmed = 0;
        foreach (PoolSlot<T>? slot in _storage.Registered)
        {
            if (excess <= 0)
            {
                break;
            }

            if (slot is null || !slot.IsIdle
                || (idleSince is { } limit && slot.History is { IdleSince: var stamp } && (stamp == 0 || stamp > limit))
                || !_storage.TryClaim(slot))
            {
                continue;
            }

            excess--;
            trimmed++;
            try
            {
                Discard(slot, slot.IsRetired ? PoolMetrics.DiscardReason.Expired : PoolMetrics.DiscardReason.Trimmed);
            }
            catch (Exception failure)
            {
                (failures ??= []).Add(failure);
            }
        }

        return trimmed;
    }

    /// <summary>What the maintenance timer holds: the pool, weakly, and the timer itself, to stop it once the pool is gone.</summary>
    private sealed class MaintenanceTick(Pool<T> pool)
    {
        private readonly WeakReference<Pool<T>> _pool = new(pool);

        public ITimer? Timer { get; set; }

        public void Run()
        {
            if (_pool.TryGetTarget(out Pool<T>? live))
            {
                live.Maintain();
            }
            else
            {
                Timer?.Dispose();
            }
        }
    }
}
