using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace PoolLib.Internal;

/// <summary>
/// A pool's waiting takers, served in arrival order, and the word every take and release reads first.
/// Protocol: a waiter queues (a fenced increment of the word), then looks for an idle slot itself,
/// locking every idle stack; a releaser publishes its slot, pushes an entry if it has none, then reads
/// the word and serves. A waiter that passed a slot still returning runs a process-wide barrier and
/// looks again: the slot is then seen idle, or its releaser sees the waiter. So no slot sits idle while
/// a waiter sleeps. A waiter is completed only under the lock, together with its unlinking: "linked"
/// means "not completed", so a hand-over never races a cancellation.
/// </summary>
internal sealed class TakeWaiters<T> where T : class
{
    private const int DisposedFlag = 1 << 30;

    // Guarded by _lock: the takers waiting, in arrival order.
    private readonly LinkedList<Waiter> _queue = new();

    // Guarded by _lock: the arrival number of the last taker queued.
    private long _arrivals;

    // Uninterruptible: every holder is halfway through something that must finish (a waiter linked
    // but not yet served, a slot claimed but not yet handed over).
    private readonly UninterruptibleLock _lock = new();

    // _queue.Count, plus DisposedFlag once the pool is disposed. Written with Interlocked (under _lock
    // for the count); read without it by every take and every publication.
    private int _word;

    /// <summary>Gets whether no taker waits and the pool is not disposed: the fast paths' one check.</summary>
    public bool IsQuietAndLive => Volatile.Read(ref _word) == 0;

    /// <summary>Gets how many takers wait.</summary>
    public int Count => Volatile.Read(ref _word) & ~DisposedFlag;

    /// <summary>Gets whether the pool is disposed.</summary>
    public bool IsDisposed => (Volatile.Read(ref _word) & DisposedFlag) != 0;

    /// <summary>
    /// Marks the pool disposed, so that the fast paths of every later take and publication come to the
    /// slow ones, and fails every waiter. Returns <see langword="false"/> if it was already disposed.
    /// </summary>
    public bool TryDispose(Func<Exception> failure)
    {
        if ((Interlocked.Or(ref _word, DisposedFlag) & DisposedFlag) != 0)
        {
            return false;
        }

        using (_lock.EnterScope())
        {
            while (_queue.First is { } node)
            {
                Unlink(node);
                node.Value.Fail(failure());
            }
        }

        return true;
    }

    /// <summary>Queues a taker, then serves the queue once, in case what it waits for is already there.</summary>
    /// <param name="supply">Where slots and units come from.</param>
    /// <param name="startTimestamp">When the wait began.</param>
    /// <param name="disposed">The exception to throw if the pool is disposed.</param>
    /// <param name="servedBefore">
    /// The waiter this taker was, if it was served and lost what it was handed to maintenance before it ran: the
    /// taker takes that waiter's place in arrival order, ahead of those that came after it.
    /// </param>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    public Waiter Enqueue(ISupply supply, long startTimestamp, Func<Exception> disposed, Waiter? servedBefore = null)
    {
        Waiter waiter;
        using (_lock.EnterScope())
        {
            // TryDispose fails the queue after it sets its flag: a waiter linked after that would never be woken.
            if (IsDisposed)
            {
                throw disposed();
            }

            waiter = new Waiter(this, startTimestamp, servedBefore?.Arrival ?? ++_arrivals);

            // Only a taker served before walks: past the few waiters older than it, also served and waiting again.
            LinkedListNode<Waiter>? later = servedBefore is null ? null : _queue.First;
            while (later is not null && later.Value.Arrival < waiter.Arrival)
            {
                later = later.Next;
            }

            if (later is null)
            {
                _queue.AddLast(waiter.Node);
            }
            else
            {
                _queue.AddBefore(later, waiter.Node);
            }

            waiter.QueuedFirst = _queue.First == waiter.Node;
            Interlocked.Increment(ref _word);
        }

        bool sawReturning = false;
        Serve(supply, released: null, scan: true, ref sawReturning);
        if (sawReturning && waiter.Node.List is not null)
        {
            // A slot passed over as still returning may be idle already, its publication not yet seen:
            // after the barrier, it is seen idle, or its releaser sees this waiter.
            Interlocked.MemoryBarrierProcessWide();
            Serve(supply, released: null, scan: true, ref sawReturning);
        }

        return waiter;
    }

    /// <summary>Hands idle slots, then units of the cap, to the waiters in arrival order, while there are any.</summary>
    /// <param name="supply">Where slots and units come from.</param>
    /// <param name="released">A slot the caller has just made idle, tried first; another thread may have taken it already.</param>
    /// <param name="scan">
    /// Whether to look for idle slots in every idle stack. Only a new waiter needs to: while one is
    /// queued, every slot made idle is served by its releaser, so the others bring their own.
    /// </param>
    /// <param name="sawReturning">Set when the scan passed over a slot still being returned.</param>
    public void Serve(ISupply supply, PoolSlot<T>? released, bool scan, ref bool sawReturning)
    {
        using (_lock.EnterScope())
        {
            while (_queue.First is { } node)
            {
                if (supply.TryClaimIdle(released, scan, out PoolSlot<T>? slot, ref sawReturning))
                {
                    released = null;
                    Unlink(node);
                    node.Value.Complete(slot);
                }
                else if (supply.TryTakeUnit())
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

    /// <summary>Fails up to <paramref name="count"/> waiters, oldest first, with <paramref name="failure"/>.</summary>
    public void FailOldest(int count, Exception failure)
    {
        using (_lock.EnterScope())
        {
            for (; count > 0 && _queue.First is { } node; count--)
            {
                Unlink(node);
                node.Value.Fail(failure);
            }
        }
    }

    /// <summary>Cancels a waiter that has not been served; <see langword="false"/> if it already was.</summary>
    public bool TryCancel(Waiter waiter, CancellationToken cancellationToken)
    {
        using (_lock.EnterScope())
        {
            if (waiter.Node.List is null)
            {
                return false;
            }

            Unlink(waiter.Node);
            waiter.Cancel(cancellationToken);
            return true;
        }
    }

    private void Unlink(LinkedListNode<Waiter> node)
    {
        Debug.Assert(_lock.IsHeldByCurrentThread);
        _queue.Remove(node);
        Interlocked.Decrement(ref _word);
    }

    /// <summary>What the queue hands out: idle slots and units of the pool's cap.</summary>
    public interface ISupply
    {
        /// <summary>Claims for a waiter <paramref name="released"/> if it is still idle, else, when <paramref name="scan"/> says so, any idle slot.</summary>
        bool TryClaimIdle(PoolSlot<T>? released, bool scan, [NotNullWhen(true)] out PoolSlot<T>? slot, ref bool sawReturning);

        /// <summary>Takes a unit of the cap for a waiter, to make an object with.</summary>
        bool TryTakeUnit();
    }

    /// <summary>One taker waiting; its result is a slot handed over, or <see langword="null"/>: a unit of the cap.</summary>
    /// <remarks>
    /// Completing it never throws and never runs the taker's code: continuations run asynchronously,
    /// and a synchronous taker sleeps on <see cref="_signal"/>, whose pulse an interrupt on the
    /// completing thread cannot stop halfway (a task's own blocking wait can throw there).
    /// </remarks>
    public sealed class Waiter : TaskCompletionSource<PoolSlot<T>?>
    {
        // How often a synchronous taker first in line spins before it sleeps (see SpinWhileFirst).
        private const int SpinRoundsBeforeSleeping = 20;

        private readonly UninterruptibleLock _signal = new();

        public Waiter(TakeWaiters<T> queue, long startTimestamp, long arrival)
            : base(TaskCreationOptions.RunContinuationsAsynchronously)
        {
            Queue = queue;
            StartTimestamp = startTimestamp;
            Arrival = arrival;
            Node = new LinkedListNode<Waiter>(this);
        }

        public TakeWaiters<T> Queue { get; }

        /// <summary>Gets the taker's place in arrival order, which it keeps if it waits again after losing a hand-over.</summary>
        public long Arrival { get; }

        /// <summary>Gets when the take began (<see cref="Stopwatch"/> units): the start of its timeout and of its wait time.</summary>
        public long StartTimestamp { get; }

        public LinkedListNode<Waiter> Node { get; }

        /// <summary>Gets or sets whether the taker had no waiter ahead of it when it queued; set by <see cref="Enqueue"/>, for its own thread.</summary>
        public bool QueuedFirst { get; set; }

        public void Complete(PoolSlot<T>? handedOver)
        {
            bool completed = TrySetResult(handedOver);
            Debug.Assert(completed, "A linked waiter is never completed.");
            _signal.PulseAll();
        }

        public void Fail(Exception failure)
        {
            TrySetException(failure);
            _signal.PulseAll();
        }

        public void Cancel(CancellationToken cancellationToken)
        {
            TrySetCanceled(cancellationToken);
            _signal.PulseAll();
        }

        /// <summary>
        /// Blocks until the waiter is completed or the deadline passes (<see cref="long.MaxValue"/>: never),
        /// spinning briefly before it sleeps; an interrupt ends it with <see cref="ThreadInterruptedException"/>.
        /// </summary>
        /// <param name="deadline">When to give up, in <see cref="Stopwatch"/> units.</param>
        /// <returns>Whether the waiter is completed.</returns>
        public bool WaitForCompletion(long deadline)
        {
            bool endless = deadline == long.MaxValue;
            SpinWhileFirst(endless, deadline);
            while (!Task.IsCompleted)
            {
                TimeSpan left = endless ? TimeSpan.MaxValue : Stopwatch.GetElapsedTime(Stopwatch.GetTimestamp(), deadline);
                if (left <= TimeSpan.Zero)
                {
                    return Task.IsCompleted;
                }

                if (left < TimeSpan.FromMilliseconds(1))
                {
                    // Below the timer's resolution a sleep would overshoot, and a yield may give the core
                    // away for a whole time slice: spin until the deadline.
                    Thread.SpinWait(64);
                    continue;
                }

                lock (_signal)
                {
                    if (!Task.IsCompleted)
                    {
                        // Whole milliseconds, rounded down: the rest is spun above.
                        Monitor.Wait(_signal, endless ? Timeout.Infinite : (int)Math.Min(int.MaxValue, left.TotalMilliseconds));
                    }
                }
            }

            return true;
        }

        /// <summary>
        /// Spins briefly, if the taker queued first in line and the machine has more than one core, until the
        /// waiter is completed. The taker is already in its place in arrival order, so no later taker goes ahead of
        /// it meanwhile.
        /// </summary>
        /// <remarks>
        /// Why: the next release is the first waiter's, and a waiter still running when it is handed its object goes
        /// on without being woken. Only the first spins: the others cannot be served before it, and spinning would
        /// take cores from the threads that hold the objects. It never yields: under load a yield may give the core
        /// away for a whole time slice, which is what a short wait must not cost.
        /// </remarks>
        private void SpinWhileFirst(bool endless, long deadline)
        {
            if (!QueuedFirst || Environment.ProcessorCount == 1)
            {
                return;
            }

            for (int i = 0; i < SpinRoundsBeforeSleeping && !Task.IsCompleted && (endless || Stopwatch.GetTimestamp() < deadline); i++)
            {
                Thread.SpinWait(1 << Math.Min(i, 8));
            }
        }
    }
}
