using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// The takes a pool's fast path could not serve: each looks everywhere a take may look, then queues in arrival order
/// (see <see cref="TakeWaiters{T}"/>) and waits, blocking its caller or asynchronously, for a slot handed over or a
/// unit of the cap to make one with; where the pool creates asynchronously, its queueing starts a creation if one is
/// needed. A taker handed a slot that maintenance took back before it ran queues again at the place it had.
/// </summary>
internal sealed class WaitingTakes<T> : TakeWaiters<T>.ISupply where T : class
{
    private readonly Pool<T> _pool;

    // Whether some takes record where they were taken: false while leak detection or its sampling is off.
    private readonly bool _samplesLeaks;

    public WaitingTakes(Pool<T> pool, bool samplesLeaks)
    {
        _pool = pool;
        _samplesLeaks = samplesLeaks;
    }

    /// <summary>The deadline, in <see cref="Stopwatch"/> units, of a take that began at <paramref name="start"/> with <paramref name="timeout"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The timeout is negative but infinite, or longer than <see cref="int.MaxValue"/> milliseconds.</exception>
    public static long Deadline(long start, TimeSpan timeout, string paramName)
    {
        if ((timeout < TimeSpan.Zero && timeout != Timeout.InfiniteTimeSpan) || timeout.TotalMilliseconds > int.MaxValue)
        {
            PoolThrowHelper.ThrowTimeoutOutOfRange(paramName);
        }

        return timeout == Timeout.InfiniteTimeSpan ? long.MaxValue : start + (long)(timeout.TotalSeconds * Stopwatch.Frequency);
    }

    /// <summary>
    /// Takes any idle object or a new one, else waits until <paramref name="deadline"/>
    /// (<see cref="long.MaxValue"/>: for ever; not after <paramref name="start"/>: not at all). Returns
    /// <see langword="null"/> on timeout.
    /// </summary>
    /// <param name="start">When the take began, in <see cref="Stopwatch"/> units; 0 to read the clock only if it waits.</param>
    /// <param name="deadline">When to give up, in the same units.</param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public PoolSlot<T>? Take(long start, long deadline)
    {
        StackTrace? trace = SampleTrace();
        PoolSlot<T>? slot = TakeOrWait(start, deadline);
        if (slot is not null)
        {
            BeginRental(slot, trace);
        }

        return slot;
    }

    /// <summary>Where a take begins, if it is one that leak detection samples; else <see langword="null"/>.</summary>
    private StackTrace? SampleTrace() =>
        _samplesLeaks ? _pool.Hints.Current.SampleLeak(_pool.Time) : null;

    /// <summary>What a take on the slow path owes its rental: where it began, if sampled, and when, if the use-time histogram is on.</summary>
    private void BeginRental(PoolSlot<T> slot, StackTrace? trace)
    {
        if (trace is not null)
        {
            _pool.Maintenance!.RecordTrace(slot, trace);
        }

        if (PoolMetrics.UseTimeEnabled)
        {
            slot.StampUse(_pool.Time);
        }
    }

    /// <summary>The body of <see cref="Take"/>, with the same parameters and result.</summary>
    private PoolSlot<T>? TakeOrWait(long start, long deadline)
    {
        // Round again only when handed a slot that maintenance took back as abandoned before this thread ran: in the
        // queue then at the place it had.
        TakeWaiters<T>.Waiter? served = null;
        while (true)
        {
            if (TryTakeWithoutWaiting(out PoolSlot<T>? slot))
            {
                return slot;
            }

            if (deadline <= start)
            {
                return null;
            }

            TakeWaiters<T>.Waiter waiter = Enqueue(start == 0 || served is not null ? Stopwatch.GetTimestamp() : start, served);
            bool completed;
            try
            {
                completed = waiter.WaitForCompletion(deadline);
            }
            catch (ThreadInterruptedException)
            {
                Abandon(waiter);
                throw;
            }

            if (!completed && _pool.Waiters.TryCancel(waiter, CancellationToken.None))
            {
                PoolMetrics.TimedOut(_pool.Name);
                return null;
            }

            if (Accept(waiter, waiter.Task.GetAwaiter().GetResult()) is { } accepted)
            {
                return accepted;
            }

            served = waiter;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public ValueTask<PoolSlot<T>> TakeAsync(CancellationToken cancellationToken)
    {
        try
        {
            // Sampled here, on the caller's thread: a wait completes on another.
            StackTrace? trace = SampleTrace();
            if (TryTakeWithoutWaiting(out PoolSlot<T>? slot))
            {
                BeginRental(slot, trace);
                return new ValueTask<PoolSlot<T>>(slot);
            }

            return new ValueTask<PoolSlot<T>>(WaitAsync(Enqueue(Stopwatch.GetTimestamp(), servedBefore: null), trace, cancellationToken));
        }
        catch (Exception failure)
        {
            return ValueTask.FromException<PoolSlot<T>>(failure);
        }
    }

    private async Task<PoolSlot<T>> WaitAsync(TakeWaiters<T>.Waiter waiter, StackTrace? trace, CancellationToken cancellationToken)
    {
        // Round again only when handed a slot that maintenance took back as abandoned before this continuation ran: in
        // the queue then at the place it had.
        while (true)
        {
            CancellationTokenRegistration registration = cancellationToken.UnsafeRegister(
                static (state, token) =>
                {
                    var waiter = (TakeWaiters<T>.Waiter)state!;
                    waiter.Queue.TryCancel(waiter, token);
                },
                waiter);

            PoolSlot<T>? handedOver;
            try
            {
                handedOver = await waiter.Task.ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                PoolMetrics.TimedOut(_pool.Name);
                throw;
            }
            finally
            {
                // Unregister, not Dispose: Dispose may wait (and so meet an interrupt) for a callback
                // running elsewhere, after the hand-over; a late callback finds the waiter unlinked and does nothing.
                registration.Unregister();
            }

            if (Accept(waiter, handedOver) is { } slot)
            {
                BeginRental(slot, trace);
                return slot;
            }

            waiter = Enqueue(Stopwatch.GetTimestamp(), servedBefore: waiter);
        }
    }

    /// <summary>
    /// Turns what a waiter was handed into a rented slot: the slot itself, or a new one made with the granted unit of
    /// the cap; <see langword="null"/> when maintenance took the slot back as abandoned before the waiter ran, which
    /// leaves it nothing: it waits again.
    /// </summary>
    private PoolSlot<T>? Accept(TakeWaiters<T>.Waiter waiter, PoolSlot<T>? handedOver)
    {
        PoolMetrics.Waited(_pool.Name, waiter.StartTimestamp);
        ThreadHints<T> hints = _pool.Hints.Current;
        bool unitKept = true;
        if (handedOver is not null && _pool.Claims.TryAccept(handedOver, hints, hinted: false, keepUnit: true, out unitKept))
        {
            return handedOver;
        }

        if (!unitKept)
        {
            return null;
        }

        // Refused (retired or invalid): its unit of the cap stayed with this taker, which makes a new object with it.
        if (_pool.Waiters.IsDisposed)
        {
            ReturnUnit();
            _pool.ThrowDisposed();
        }

        return CreateRentedSlot(hints);
    }

    /// <summary>Queues a taker (see <see cref="TakeWaiters{T}.Enqueue"/>); where the pool creates asynchronously, starts a creation if it needs one.</summary>
    private TakeWaiters<T>.Waiter Enqueue(long startTimestamp, TakeWaiters<T>.Waiter? servedBefore)
    {
        TakeWaiters<T>.Waiter waiter = _pool.Waiters.Enqueue(this, startTimestamp, _pool.NewDisposedException, servedBefore);
        if (_pool.CreatesAsynchronously)
        {
            _pool.Creator!.Pump();
        }

        return waiter;
    }

    /// <summary>Withdraws a waiter whose taker stops waiting for good, giving back whatever it was already handed.</summary>
    private void Abandon(TakeWaiters<T>.Waiter waiter)
    {
        if (_pool.Waiters.TryCancel(waiter, CancellationToken.None) || !waiter.Task.IsCompletedSuccessfully)
        {
            return;
        }

        // Served in between: a waiter is unlinked only together with its completion. A slot handed over stays rented
        // to it unless maintenance took it back as abandoned, which discarded it and gave its place back.
        if (waiter.Task.Result is { } slot)
        {
            if (slot.TryBeginReturn())
            {
                _pool.Releases.StoreAgain(slot);
            }
        }
        else
        {
            ReturnUnit();
        }
    }

    /// <summary>Gives a unit of the cap back: to a waiter, or to a background creation, if one needs it.</summary>
    public void ReturnUnit()
    {
        _pool.Cap.Release();

        // The release was a full fence: a waiter that queued before it is seen here and gets the unit.
        if (_pool.Waiters.Count != 0)
        {
            bool unused = false;
            _pool.Waiters.Serve(this, released: null, scan: false, ref unused);
        }

        _pool.Creator?.Pump();
    }

    public bool TryClaimIdle(PoolSlot<T>? released, bool scan, [NotNullWhen(true)] out PoolSlot<T>? slot, ref bool sawReturning)
    {
        // A waiter's look meets every idle slot before it sleeps, but walks past stale entries only while one is idle.
        if ((released is not null && released.TryClaimIdle() && (slot = released) is not null)
            || (scan && _pool.Claims.TryTakeFromStacks(out slot, waiting: true, ref sawReturning)))
        {
            _pool.Hints.Current.CountIdle(-1);
            return true;
        }

        slot = null;
        return false;
    }

    // An asynchronous pool's waiters are served by its creations, never handed a unit to make an object with.
    public bool TryTakeUnit() => !_pool.CreatesAsynchronously && _pool.Cap.TryTake();

    /// <summary>Any idle object, else a new one within the cap; never waits and never goes ahead of a waiter.</summary>
    public bool TryTakeWithoutWaiting([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        if (_pool.IsDisposed)
        {
            _pool.ThrowDisposed();
        }

        ThreadHints<T> hints = _pool.Hints.Current;
        while (_pool.Waiters.IsQuietAndLive)
        {
            bool refused;
            if (hints.TryTake(_pool.Registry.Array, out slot))
            {
                refused = !_pool.Claims.TryAccept(slot, hints, hinted: true, keepUnit: false, out _);
            }
            else
            {
                slot = _pool.Claims.TakeIdleOrNew(hints, out refused);
            }

            if (!refused)
            {
                return slot is not null;
            }
        }

        slot = null;
        return false;
    }

    /// <summary>
    /// Makes an object for a taker with one unit of the cap the caller already holds, and starts its rental; null
    /// if maintenance took the new rental back as abandoned while <see cref="Pool{T}.HoldSlotInObject"/> ran (its object
    /// discarded, its unit given back).
    /// </summary>
    public PoolSlot<T>? CreateRentedSlot(ThreadHints<T> hints)
    {
        PoolSlot<T> slot = _pool.Lifecycle.CreateSlot();
        if (!slot.IsRented)
        {
            return null;
        }

        hints.Hint(_pool.Registry.IndexOf(slot), _pool.MaxHints);
        return slot;
    }
}
