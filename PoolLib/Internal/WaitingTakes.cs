using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// The takes a pool's fast path could not serve: each looks everywhere a take may look, then queues in arrival order
/// (see <see cref="TakeWaiters{T}"/>) and waits, blocking its caller or asynchronously, for a slot handed over or a
/// unit of the cap to make one with; where the pool creates asynchronously, its queueing starts a creation if one is
/// needed. A taker handed a slot that maintenance took back before it ran queues again at the place it had.
/// </summary>
internal sealed class WaitingTakes<T> where T : class
{
    private readonly Pool<T> _pool;

    // One take in this many records where it was taken; 0 while leak detection or its sampling is off.
    private readonly int _leakSamplingInterval;

    public WaitingTakes(Pool<T> pool, int leakSamplingInterval)
    {
        _pool = pool;
        _leakSamplingInterval = leakSamplingInterval;
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
        _leakSamplingInterval != 0 && _pool.Hints.Current.TakeLeakSample(_leakSamplingInterval) ? CallerStackTrace.Capture() : null;

    /// <summary>What a take on the slow path owes its rental: where it began, if sampled, and when, if the use-time histogram is on.</summary>
    private void BeginRental(PoolSlot<T> slot, StackTrace? trace)
    {
        if (trace is not null)
        {
            _pool.Maintenance!.RecordTrace(slot, trace);
        }

        if (PoolMetrics.UseTimeEnabled)
        {
            _pool.BeginUse(slot);
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
            if (_pool.TryTakeWithoutWaiting(out PoolSlot<T>? slot))
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
            if (_pool.TryTakeWithoutWaiting(out PoolSlot<T>? slot))
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
        if (handedOver is not null && _pool.TryAccept(handedOver, hints, hinted: false, keepUnit: true, out unitKept))
        {
            return handedOver;
        }

        if (!unitKept)
        {
            return null;
        }

        // Refused (retired or invalid): its place under the cap stayed with this taker, which makes a new object with it.
        if (_pool.Waiters.IsDisposed)
        {
            _pool.ReturnUnit();
            _pool.ThrowDisposed();
        }

        return _pool.CreateRentedSlot(hints);
    }

    /// <summary>Queues a taker (see <see cref="TakeWaiters{T}.Enqueue"/>); where the pool creates asynchronously, starts a creation if it needs one.</summary>
    private TakeWaiters<T>.Waiter Enqueue(long startTimestamp, TakeWaiters<T>.Waiter? servedBefore)
    {
        TakeWaiters<T>.Waiter waiter = _pool.Waiters.Enqueue(_pool, startTimestamp, _pool.NewDisposedException, servedBefore);
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
                _pool.StoreAgain(slot);
            }
        }
        else
        {
            _pool.ReturnUnit();
        }
    }
}
