namespace PoolBench.Pools.UnderTest;

/// <summary>
/// How many objects a collection-based pool holds, kept beside the collection because
/// <c>ConcurrentStack.Count</c> walks the stack. Invariant: between calls, the count never exceeds
/// the capacity; a return that would pass it is refused and the object is dropped.
/// </summary>
internal sealed class CapacityCount(int capacity)
{
    private int _count;

    /// <summary>Makes room for one returned object; false when the pool is full.</summary>
    public bool TryAdd()
    {
        if (Interlocked.Increment(ref _count) <= capacity)
        {
            return true;
        }

        Interlocked.Decrement(ref _count);
        return false;
    }

    /// <summary>Counts one object taken out.</summary>
    public void Remove() => Interlocked.Decrement(ref _count);
}
