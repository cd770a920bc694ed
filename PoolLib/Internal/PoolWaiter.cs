namespace PoolLib.Internal;

/// <summary>
/// One taker waiting for an exhausted pool, queued first-come first-served.
/// </summary>
/// <remarks>
/// The result is either a slot handed over by a release, or <see langword="null"/>: a grant of one
/// unit of the allocation budget, with which the waiter creates the object itself (so no object is
/// ever constructed under the pool's lock). The pool completes a waiter only while holding its
/// waiter lock and only together with unlinking <see cref="Node"/>, so a waiter is in the queue if
/// and only if it is not completed. Continuations run asynchronously, never inline under that lock.
/// </remarks>
internal sealed class PoolWaiter<T> : TaskCompletionSource<PoolSlot<T>?> where T : class
{
    public PoolWaiter(Pool<T> pool)
        : base(TaskCreationOptions.RunContinuationsAsynchronously)
    {
        Pool = pool;
        Node = new LinkedListNode<PoolWaiter<T>>(this);
    }

    public Pool<T> Pool { get; }

    public LinkedListNode<PoolWaiter<T>> Node { get; }
}
