using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using PoolLib.Internal;

namespace PoolLib;

// The waiting half of Pool<T>: what a taker does when it finds no idle object it can take.
//
// Protocol. A waiter joins the queue under _waitersLock, incrementing _waitersOrDisposed with an
// interlocked operation, and then calls ServeWaiters itself, which scans the registry. Every
// publication of an idle slot is an interlocked swap of its state, and every return of budget an
// interlocked operation too; each reads _waitersOrDisposed after it and calls ServeWaiters when it is
// non-zero. So both sides fence between "publish" and "look", and at least one sees the other: a
// slot or unit never sits idle while a waiter sleeps (no lost wake-up), and no process-wide barrier
// is needed. ServeWaiters, under the lock, hands idle slots (the one just released first, else any
// in the registry), then units of budget, to the queue's head in order.
//
// Completion. A waiter is completed (result, cancellation, or ObjectDisposedException) only under
// the lock and only together with unlinking it, so "linked" means "not completed": a hand-over can
// never race a cancellation, and a cancelled or timed-out waiter leaves nothing behind.
public abstract partial class Pool<T>
{
    // How often a synchronous taker retries, spinning and then yielding, before it queues (see TrySpinTake).
    private const int SpinRoundsBeforeWaiting = 20;

    // Guarded by _waitersLock: the takers waiting, oldest first.
    private readonly LinkedList<Waiter> _waiters = new();

    // Uninterruptible: every holder is halfway through something that must finish (a waiter linked
    // but not yet served, a slot popped but not yet handed over).
    private readonly UninterruptibleLock _waitersLock = new();

    // Set in _waitersOrDisposed once Dispose has begun, so that the one read every take and every
    // publication makes sends both to their slow paths.
    private const int DisposedFlag = 1 << 30;

    // _waiters.Count, plus DisposedFlag once Dispose has begun. The count is written only under the
    // lock, and both with Interlocked, for the fence that the protocol above relies on; read without
    // the lock on every take and every publication of an idle slot.
    private int _waitersOrDisposed;

    /// <summary>Gets how many takers are waiting.</summary>
    internal int WaiterCount => Volatile.Read(ref _waitersOrDisposed) & ~DisposedFlag;

    /// <summary>Gets the waiter lock; for tests that contend it.</summary>
    internal UninterruptibleLock WaitersLock => _waitersLock;

    /// <summary>Gets the signal the longest-waiting taker sleeps on, if any; for tests that contend it.</summary>
    internal UninterruptibleLock? FirstWaiterSignal
    {
        get
        {
            using (_waitersLock.EnterScope())
            {
                return _waiters.First?.Value.Signal;
            }
        }
    }

    /// <summary>
    /// Takes any idle object or a new one, else waits up to <paramref name="millisecondsTimeout"/>
    /// (<see cref="Timeout.Infinite"/> for ever). Returns <see langword="null"/> on timeout.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private PoolSlot<T>? TakeSlotSlow(int millisecondsTimeout)
    {
        if (TryTakeWithoutWaiting(out PoolSlot<T>? slot))
        {
            return slot;
        }

        if (millisecondsTimeout == 0)
        {
            return null;
        }

        if (TrySpinTake(out slot))
        {
            return slot;
        }

        Waiter waiter = Enqueue();
        bool completed;
        try
        {
            completed = waiter.WaitForCompletion(millisecondsTimeout);
        }
        catch (ThreadInterruptedException)
        {
            Abandon(waiter);
            throw;
        }

        if (!completed && TryCancel(waiter, CancellationToken.None))
        {
            return null;
        }

        return Accept(waiter, waiter.Task.GetAwaiter().GetResult());
    }

    /// <summary>
    /// Spins briefly, yielding the core after the first few rounds, and takes an object if one
    /// turns up with no waiter queued. Only a thread that is about to block does this.
    /// </summary>
    /// <remarks>
    /// Why: when takers outnumber cores, the objects are often held by threads that were preempted
    /// mid-rental. Blocking then makes every later release a hand-over to a sleeping thread, and
    /// new takers must queue behind it, so the pool runs at the rate of thread wake-ups and the
    /// queue never drains (a convoy). A taker that yields instead lets the holder run and release;
    /// and because a spinning taker is not in the queue, a queue that has formed drains while its
    /// would-be joiners spin. Fairness is kept: a spinner is not a waiter, and it takes only when
    /// no waiter is queued (<see cref="TryTakeWithoutWaiting"/>).
    /// </remarks>
    private bool TrySpinTake([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        // SpinWait sleeps now and then, so an interrupt may end the spin with ThreadInterruptedException,
        // as it would any blocking take; nothing is held between rounds, so nothing is left behind.
        var spinner = new SpinWait();
        for (int i = 0; i < SpinRoundsBeforeWaiting; i++)
        {
            spinner.SpinOnce(sleep1Threshold: -1);
            if (TryTakeWithoutWaiting(out slot))
            {
                return true;
            }
        }

        slot = null;
        return false;
    }

    /// <summary>Any idle object, else a new one within the cap; never waits and never goes ahead of a waiter.</summary>
    private bool TryTakeWithoutWaiting([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        ThrowIfDisposed();
        while (Volatile.Read(ref _waitersOrDisposed) == 0)
        {
            if (_storage.TryTakeOwn(out slot) || _storage.TryClaimAny(out slot))
            {
                if (slot.IsRetired)
                {
                    Discard(slot, PoolMetrics.DiscardReason.Expired);
                    continue;
                }

                if (_takeChecks == 0 || PassesTakeChecks(slot, keepBudgetIfInvalid: false))
                {
                    return true;
                }

                // Invalid and discarded: look again, as if it had never been there.
                continue;
            }

            if (_allocationBudget.TryTake())
            {
                slot = CreateRentedSlot();
                return true;
            }

            break;
        }

        slot = null;
        return false;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private ValueTask<PoolSlot<T>> TakeSlotSlowAsync(CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<PoolSlot<T>>(cancellationToken);
        }

        if (TryTakeWithoutWaiting(out PoolSlot<T>? slot))
        {
            return new ValueTask<PoolSlot<T>>(slot);
        }

        return new ValueTask<PoolSlot<T>>(WaitAsync(Enqueue(), cancellationToken));
    }

    private async Task<PoolSlot<T>> WaitAsync(Waiter waiter, CancellationToken cancellationToken)
    {
        CancellationTokenRegistration registration = cancellationToken.UnsafeRegister(
            static (state, token) =>
            {
                var waiter = (Waiter)state!;
                waiter.Pool.TryCancel(waiter, token);
            },
            waiter);

        PoolSlot<T>? handedOver;
        try
        {
            handedOver = await waiter.Task.ConfigureAwait(false);
        }
        finally
        {
            // Unregister, not Dispose: Dispose may wait (and so meet an interrupt) for a callback
            // running elsewhere, after the hand-over; a late callback finds the waiter unlinked and does nothing.
            registration.Unregister();
        }

        return Accept(waiter, handedOver);
    }

    /// <summary>Turns what a waiter was handed into a rented slot: the slot itself, or a new one made with the granted budget.</summary>
    private PoolSlot<T> Accept(Waiter waiter, PoolSlot<T>? handedOver)
    {
        PoolMetrics.Waited(_name, waiter.StartTimestamp);
        if (handedOver is not null)
        {
            _storage.NoteTaken(handedOver);
            if (handedOver.IsRetired)
            {
                DiscardRefused(handedOver, PoolMetrics.DiscardReason.Expired, keepBudget: true);
            }
            else if (_takeChecks == 0 || PassesTakeChecks(handedOver, keepBudgetIfInvalid: true))
            {
                return handedOver;
            }

            // Retired or invalid: its place under the cap stayed with this taker, which makes a new object with it.
        }

        if (Volatile.Read(ref _disposed) != 0)
        {
            ReturnBudget();
            ThrowDisposed();
        }

        return CreateRentedSlot();
    }

    /// <summary>Queues a new waiter and serves the queue once, in case what it waits for is already there.</summary>
    private Waiter Enqueue()
    {
        var waiter = new Waiter(this);
        using (_waitersLock.EnterScope())
        {
            // Dispose sets _disposed before it takes this lock to fail the queue, so a waiter
            // linked after that would never be woken: refuse it here instead.
            ThrowIfDisposed();
            _waiters.AddLast(waiter.Node);
            Interlocked.Increment(ref _waitersOrDisposed);
        }

        ServeWaiters(released: null, scan: true);
        return waiter;
    }

    /// <summary>Hands idle slots, then units of budget, to the waiters in arrival order, while there are any.</summary>
    /// <param name="released">A slot the caller has just made idle, tried first; another thread may have taken it already.</param>
    /// <param name="scan">
    /// Whether to look for idle slots in the whole registry. Only a new waiter needs to: while one is
    /// queued, every slot made idle is served by its publisher (see <see cref="ServeIfWaitedFor"/>),
    /// so the others look only at the slot or unit they bring.
    /// </param>
    /// <remarks>
    /// A slot handed over may be retired: the waiter discards it on its own thread (see
    /// <see cref="Accept"/>), so that no object's Dispose runs under the lock.
    /// </remarks>
    private void ServeWaiters(PoolSlot<T>? released, bool scan = false)
    {
        using (_waitersLock.EnterScope())
        {
            while (_waiters.First is { } node)
            {
                PoolSlot<T>? slot = released is not null && _storage.TryClaim(released) ? released : null;
                released = null;
                if (slot is not null || (scan && _storage.TryClaimAny(out slot, forCaller: false)))
                {
                    Unlink(node);
                    node.Value.Complete(slot);
                }
                else if (_allocationBudget.TryTake())
                {
                    Unlink(node);
                    node.Value.Complete(null);
                }
                else
                {
                    return;
                }
            }
        }
    }

    /// <summary>Withdraws a waiter whose taker stops waiting for good, giving back whatever it was already handed.</summary>
    private void Abandon(Waiter waiter)
    {
        if (TryCancel(waiter, CancellationToken.None))
        {
            return;
        }

        // Served in between: a waiter is unlinked only together with its completion, so the task is done.
        Task<PoolSlot<T>?> handOver = waiter.Task;
        if (!handOver.IsCompletedSuccessfully)
        {
            return;
        }

        if (handOver.Result is { } slot)
        {
            StoreAgain(slot);
        }
        else
        {
            ReturnBudget();
        }
    }

    /// <summary>Cancels a waiter that has not been served; <see langword="false"/> if it already was.</summary>
    private bool TryCancel(Waiter waiter, CancellationToken cancellationToken)
    {
        using (_waitersLock.EnterScope())
        {
            if (waiter.Node.List is null)
            {
                return false;
            }

            Unlink(waiter.Node);
            waiter.Cancel(cancellationToken);
            PoolMetrics.TimedOut(_name);
            return true;
        }
    }

    private void FailAllWaiters()
    {
        using (_waitersLock.EnterScope())
        {
            while (_waiters.First is { } node)
            {
                Unlink(node);
                node.Value.Fail(new ObjectDisposedException(GetType().FullName));
            }
        }
    }

    private void Unlink(LinkedListNode<Waiter> node)
    {
        Debug.Assert(_waitersLock.IsHeldByCurrentThread);
        _waiters.Remove(node);
        Interlocked.Decrement(ref _waitersOrDisposed);
    }
}
