using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using PoolLib.Internal;

namespace PoolLib;

// The waiting half of Pool<T>: what a taker does when it finds the pool exhausted.
//
// Protocol. A waiter first enters the storage's foreign-access gate, which ends with every thread
// either done with its own cache or certain to see the gate closed; it then joins the queue (under
// _waitersLock, incrementing _waiterCount with an interlocked operation) and calls ServeWaiters
// itself. While the gate is closed no release keeps a slot in its thread's cache: every release
// pushes onto the shared stack, and every push and every return of budget reads _waiterCount after
// its own interlocked operation and calls ServeWaiters when it is non-zero. ServeWaiters, under the
// lock, hands idle slots (the stack, then any thread's cache), then units of budget, to the queue's
// head in order. Slots kept in caches before the gate closed are found by the waiter's own call;
// for the rest, both sides fence between "publish" and "look", so at least one sees the other and a
// slot or unit never sits idle while a waiter sleeps (no lost wake-up).
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

    // Equal to _waiters.Count; written only under the lock (with Interlocked, for the fence that
    // the protocol above relies on), read without it on every take and release.
    private int _waiterCount;

    /// <summary>Gets how many takers are waiting; for tests that check nothing is left behind.</summary>
    internal int WaiterCount => Volatile.Read(ref _waiterCount);

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

    /// <summary>Gets the lock that guards the table of per-thread caches; for tests that contend it.</summary>
    internal UninterruptibleLock CacheTableLock => _storage.CacheTableLock;

    /// <summary>Gets the lock that guards the registry of slots; for tests that contend it.</summary>
    internal UninterruptibleLock RegistryLock => _storage.RegistryLock;

    /// <summary>Gets whether any thread holds the storage's gate closed; for tests that check nothing is left behind.</summary>
    internal bool IsForeignAccessGateClosed => _storage.IsGateClosed;

    /// <summary>
    /// Takes any idle object or a new one, else waits up to <paramref name="millisecondsTimeout"/>
    /// (<see cref="Timeout.Infinite"/> for ever). Returns <see langword="null"/> on timeout.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private PoolSlot<T>? TakeSlotSlow(int millisecondsTimeout)
    {
        // A taker that may spin and finds the cap reached looks into other threads' caches only on
        // its last round: the holders' next returns usually reach the stack within the spin (a full
        // cache drains onto it), and a look now would cost a barrier for an object about to be free.
        if (TryTakeWithoutWaiting(out PoolSlot<T>? slot, lookInCaches: millisecondsTimeout == 0))
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
    /// no waiter is queued (<see cref="TryTakeWithoutWaiting"/>). The rounds look where every
    /// thread looks (the shared stack, the cap); only the last also looks into other threads'
    /// caches, because each such look may cost a process-wide barrier and many spinners looking
    /// every round ran them in bursts.
    /// </remarks>
    private bool TrySpinTake([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        // SpinWait sleeps now and then, so an interrupt may end the spin with ThreadInterruptedException,
        // as it would any blocking take; nothing is held between rounds, so nothing is left behind.
        var spinner = new SpinWait();
        for (int i = 0; i < SpinRoundsBeforeWaiting; i++)
        {
            spinner.SpinOnce(sleep1Threshold: -1);
            if (TryTakeWithoutWaiting(out slot, lookInCaches: i == SpinRoundsBeforeWaiting - 1))
            {
                return true;
            }
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
            handedOver.MarkRented();
            if (_takeChecks == 0 || PassesTakeChecks(handedOver, keepBudgetIfInvalid: true))
            {
                return handedOver;
            }

            // Invalid: its place under the cap stayed with this taker, which makes a new object with it.
        }

        if (Volatile.Read(ref _disposed) != 0)
        {
            ReturnBudget();
            ThrowDisposed();
        }

        return CreateRentedSlot();
    }

    /// <summary>Queues a new waiter and serves the queue once, in case what it waits for is already there.</summary>
    /// <remarks>
    /// A waiter stays inside the storage's gate while it is queued (it enters here, and
    /// <see cref="Unlink"/> exits), so threads stop keeping slots in their own caches and
    /// ServeWaiters may take from those caches on its behalf. If it is not linked after all (the
    /// pool is disposed), it exits the gate here, so a failed take never leaves it closed.
    /// </remarks>
    private Waiter Enqueue()
    {
        var waiter = new Waiter(this);
        _storage.EnterForeign();

        bool linked = false;
        try
        {
            using (_waitersLock.EnterScope())
            {
                // Dispose sets _disposed before it takes this lock to fail the queue, so a waiter
                // linked after that would never be woken: refuse it here instead.
                ThrowIfDisposed();
                _waiters.AddLast(waiter.Node);
                Interlocked.Increment(ref _waiterCount);
                linked = true;
            }
        }
        finally
        {
            if (!linked)
            {
                _storage.ExitForeign();
            }
        }

        ServeWaiters();
        return waiter;
    }

    /// <summary>Hands idle slots, then units of budget, to the waiters in arrival order, while there are any.</summary>
    private void ServeWaiters()
    {
        using (_waitersLock.EnterScope())
        {
            while (_waiters.First is { } node)
            {
                Waiter waiter = node.Value;
                // The head waiter holds the gate closed until it is unlinked, so its caches may be drained.
                if (_storage.TryTakeAny(out PoolSlot<T>? slot))
                {
                    Unlink(node);
                    waiter.Complete(slot);
                }
                else if (_allocationBudget.TryTake())
                {
                    Unlink(node);
                    waiter.Complete(null);
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
            // Cleaned when it was released; it goes back as it came, without another CleanUp.
            slot.MarkRented();
            Store(slot);
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
        Interlocked.Decrement(ref _waiterCount);
        _storage.ExitForeign();
    }

    /// <summary>One taker waiting for an exhausted pool, queued first-come first-served.</summary>
    /// <remarks>
    /// The result is either a slot handed over by a release, or <see langword="null"/>: a grant of one
    /// unit of the cap, with which the waiter creates the object itself (so no object is ever
    /// constructed under the waiter lock). The pool completes a waiter only under that lock and only
    /// together with unlinking <see cref="Node"/>, so a waiter is in the queue if and only if it is
    /// not completed. Completing one never throws and never runs the taker's code: continuations run
    /// asynchronously, and a synchronous taker waits on <see cref="_signal"/>, not on the task, so
    /// its wake-up is a pulse that an interrupt on the completing thread cannot stop halfway (a task's
    /// own blocking wait is woken through a lock that can throw there, after the task has completed).
    /// </remarks>
    private sealed class Waiter : TaskCompletionSource<PoolSlot<T>?>
    {
        private readonly UninterruptibleLock _signal = new();

        public Waiter(Pool<T> pool)
            : base(TaskCreationOptions.RunContinuationsAsynchronously)
        {
            Pool = pool;
            Node = new LinkedListNode<Waiter>(this);
        }

        public Pool<T> Pool { get; }

        /// <summary>Gets when the taker began to wait, for the wait-time histogram (<see cref="Stopwatch"/> units).</summary>
        public long StartTimestamp { get; } = Stopwatch.GetTimestamp();

        public LinkedListNode<Waiter> Node { get; }

        /// <summary>Gets what a synchronous taker sleeps on.</summary>
        public UninterruptibleLock Signal => _signal;

        /// <summary>Hands the waiter a slot, or a unit of the cap (<see langword="null"/>).</summary>
        public void Complete(PoolSlot<T>? handedOver)
        {
            bool completed = TrySetResult(handedOver);
            Debug.Assert(completed, "A linked waiter is never completed.");
            _signal.PulseAll();
        }

        /// <summary>Wakes the waiter with <paramref name="failure"/>.</summary>
        public void Fail(Exception failure)
        {
            TrySetException(failure);
            _signal.PulseAll();
        }

        /// <summary>Wakes the waiter as cancelled.</summary>
        public void Cancel(CancellationToken cancellationToken)
        {
            TrySetCanceled(cancellationToken);
            _signal.PulseAll();
        }

        /// <summary>
        /// Blocks until the waiter is completed or <paramref name="millisecondsTimeout"/> passes
        /// (<see cref="Timeout.Infinite"/>: never); an interrupt ends it with <see cref="ThreadInterruptedException"/>.
        /// </summary>
        /// <returns>Whether the waiter is completed.</returns>
        public bool WaitForCompletion(int millisecondsTimeout)
        {
            long start = Environment.TickCount64;
            lock (_signal)
            {
                while (!Task.IsCompleted)
                {
                    int left = millisecondsTimeout == Timeout.Infinite
                        ? Timeout.Infinite
                        : (int)Math.Max(0, millisecondsTimeout - (Environment.TickCount64 - start));
                    if (left == 0 || !Monitor.Wait(_signal, left))
                    {
                        return Task.IsCompleted;
                    }
                }

                return true;
            }
        }
    }
}
