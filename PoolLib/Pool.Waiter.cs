using System.Diagnostics;
using PoolLib.Internal;

namespace PoolLib;

public abstract partial class Pool<T>
{
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
