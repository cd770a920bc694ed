using System.Diagnostics;
using PoolLib.Internal;

namespace PoolLib;

public abstract partial class Pool<T>
{
    // The idle sweep and the leak scan, on one timer per pool; null when neither option is on.
    private ITimer? _maintenanceTimer;

    // The longest period a timer accepts: uint.MaxValue - 1 milliseconds, about 49.7 days.
    private const long MaxTimerPeriodTicks = (uint.MaxValue - 1L) * TimeSpan.TicksPerMillisecond;

    // 1 while a sweep runs, so that a slow sweep and the next tick never overlap.
    private int _sweeping;

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
    /// Objects kept in per-thread caches count as idle. Rented objects are not touched. While it
    /// runs, the idle objects are briefly out of reach, so a concurrent take may make a new object
    /// (within the cap) or wait; every object not disposed is back before this returns. Every
    /// object to dispose is disposed even if some throw; then the one exception is rethrown as it is,
    /// or several in an <see cref="AggregateException"/>.
    /// </remarks>
    public int Trim()
    {
        ThrowIfDisposed();
        if (AvailableCount <= _minIdle)
        {
            return 0;
        }

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
    /// <see cref="PoolOptions.MinIdle"/> does not apply. An object made before this call and stored
    /// while it runs (by a concurrent release, <see cref="Trim"/> or idle sweep) is disposed when a
    /// taker or a later trim finds it, never handed out. After the first call, every take and
    /// release compares one more field.
    /// </remarks>
    public void Clear()
    {
        ThrowIfDisposed();
        Interlocked.Increment(ref _generation);
        Interlocked.Or(ref _takeChecks, DiscardCleared);
        Interlocked.Or(ref _releaseChecks, DiscardCleared);
        TrimIdle(idleSince: null, out List<Exception>? failures, keep: 0);
        if (failures is not null)
        {
            ThrowDisposeFailures(failures);
        }
    }

    /// <summary>Runs one idle sweep and leak scan now, as the timer does; for tests that drive time themselves.</summary>
    internal void RunMaintenance() => Maintain();

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
    /// One tick of the timer: marks objects older than <see cref="PoolOptions.MaxObjectLifetime"/>
    /// (a release then discards them, and idle ones are discarded here), stamps idle slots with the
    /// time they were first seen idle, trims those idle for longer than <see cref="PoolOptions.IdleTimeout"/>
    /// (down to <see cref="PoolOptions.MinIdle"/>), and reports rentals held longer than
    /// <see cref="PoolOptions.LeakDetectionThreshold"/>.
    /// </summary>
    /// <remarks>Allocates nothing unless it finds an object to trim or a rental to report.</remarks>
    private void Maintain()
    {
        if (Volatile.Read(ref _disposed) != 0 || Interlocked.Exchange(ref _sweeping, 1) != 0)
        {
            return;
        }

        try
        {
            long now = _timeProvider.GetTimestamp();
            int idleTooLong = 0;
            int idleTooOld = 0;
            foreach (PoolSlot<T>? slot in _storage.Registered)
            {
                if (slot is null)
                {
                    continue;
                }

                if (_maxObjectLifetime != 0 && !slot.Expired && now - slot.CreatedAt >= _maxObjectLifetime)
                {
                    Volatile.Write(ref slot.Expired, true);
                }

                if (slot.IsInPool)
                {
                    idleTooOld += slot.Expired ? 1 : 0;
                    idleTooLong += _idleTimeout != 0 ? StampIdle(slot, now) : 0;
                }
                else if (_leakDetectionThreshold != 0 && slot.IsRented)
                {
                    ReportIfLeaked(slot, now);
                }
            }

            if (idleTooOld != 0 || (idleTooLong != 0 && AvailableCount > _minIdle))
            {
                // Failures of idle objects' Dispose have no caller to reach; the objects are gone either way.
                TrimIdle(idleSince: _idleTimeout != 0 ? now - _idleTimeout : long.MinValue, out _);
            }
        }
        catch (ObjectDisposedException) when (Volatile.Read(ref _disposed) != 0)
        {
            // Disposed mid-sweep: Dispose disposes what is left.
        }
        finally
        {
            Volatile.Write(ref _sweeping, 0);
        }
    }

    /// <summary>Stamps an idle slot first seen idle now; returns 1 if it has been idle for longer than the idle timeout.</summary>
    private int StampIdle(PoolSlot<T> slot, long now)
    {
        long idleSince = Volatile.Read(ref slot.IdleSince);
        if (idleSince == 0)
        {
            // A release that races this stamp clears it again (see IsStaleOnRelease): idle from then.
            Volatile.Write(ref slot.IdleSince, now);
            return 0;
        }

        return now - idleSince >= _idleTimeout ? 1 : 0;
    }

    /// <summary>Raises <see cref="RentalLeakSuspected"/> for a rental held longer than the threshold and not yet reported.</summary>
    private void ReportIfLeaked(PoolSlot<T> slot, long now)
    {
        long rental = Volatile.Read(ref slot.RentalNumber);
        long rentedAt = Volatile.Read(ref slot.RentedAt);
        StackTrace? takenAt = Volatile.Read(ref slot.TakenAt);
        if (rental == 0 || takenAt is null || now - rentedAt < _leakDetectionThreshold || Volatile.Read(ref slot.LeakReportedFor) == rental)
        {
            return;
        }

        Volatile.Write(ref slot.LeakReportedFor, rental);

        // The slot may have gone back (and out again) since these reads: report only if not.
        if (!slot.IsRented || Volatile.Read(ref slot.RentalNumber) != rental)
        {
            return;
        }

        if (RentalLeakSuspected is not { } handlers)
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

    /// <summary>Starts a tracked rental: when it began and where (leak detection).</summary>
    private void BeginTrackedRental(PoolSlot<T> slot)
    {
        // Only the taker writes these; the number last, so a scan that reads it before and after
        // the others and sees it unchanged read one rental's time and trace.
        Volatile.Write(ref slot.TakenAt, new StackTrace(1, fNeedFileInfo: false));
        Volatile.Write(ref slot.RentedAt, _timeProvider.GetTimestamp());
        Volatile.Write(ref slot.RentalNumber, slot.RentalNumber + 1);
    }

    /// <summary>
    /// Takes every idle object out, disposes those past their lifetime and those to trim, and stores
    /// the rest again, keeping at least <paramref name="keep"/> of those within their lifetime idle
    /// (<see cref="PoolOptions.MinIdle"/> unless given).
    /// </summary>
    /// <param name="idleSince">
    /// Trim only objects the idle sweep has seen idle since this timestamp or earlier;
    /// <see langword="null"/> to trim any idle object.
    /// </param>
    /// <param name="failures">Exceptions from the objects' Dispose, if any threw.</param>
    /// <param name="keep">How many idle objects to keep at least; -1 for <see cref="PoolOptions.MinIdle"/>.</param>
    /// <returns>How many objects were disposed.</returns>
    private int TrimIdle(long? idleSince, out List<Exception>? failures, int keep = -1)
    {
        failures = null;
        keep = keep < 0 ? _minIdle : keep;
        if (AvailableCount == 0)
        {
            return 0;
        }

        // Inside the gate every cache can be emptied; the slots taken stay marked in-pool while out.
        var idle = new List<PoolSlot<T>>();
        _storage.EnterForeign();
        try
        {
            while (_storage.TryTakeAny(out PoolSlot<T>? slot))
            {
                idle.Add(slot);
            }
        }
        finally
        {
            _storage.ExitForeign();
        }

        // Oldest first: the first taken were the most recently stored, so they are the ones kept,
        // and pushed last, they end up on top again.
        int disposed = 0;
        // An object made before the last Clear goes too: a Clear that ran while these were out found none of them.
        int generation = Volatile.Read(ref _generation);
        int canTrim = idle.Count(slot => !slot.Expired && slot.Generation == generation) - keep;
        for (int i = idle.Count - 1; i >= 0; i--)
        {
            PoolSlot<T> slot = idle[i];
            long stamp = Volatile.Read(ref slot.IdleSince);
            PoolMetrics.DiscardReason? reason =
                slot.Expired ? PoolMetrics.DiscardReason.Expired
                : slot.Generation != generation ? PoolMetrics.DiscardReason.Trimmed
                : canTrim > 0 && (idleSince is not { } limit || (stamp != 0 && stamp <= limit)) ? PoolMetrics.DiscardReason.Trimmed
                : null;
            if (reason is null)
            {
                _storage.PushShared(slot);
                continue;
            }

            canTrim -= reason == PoolMetrics.DiscardReason.Trimmed && slot.Generation == generation ? 1 : 0;
            disposed++;
            try
            {
                Discard(slot, reason);
            }
            catch (Exception failure)
            {
                (failures ??= []).Add(failure);
            }
        }

        // What every push owes; a pool disposed meanwhile disposes what was stored again.
        try
        {
            ServeAfterSharedPush();
        }
        catch (Exception failure)
        {
            (failures ??= []).Add(failure);
        }

        return disposed;
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
