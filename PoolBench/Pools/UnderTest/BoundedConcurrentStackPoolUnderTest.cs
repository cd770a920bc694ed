using System.Collections.Concurrent;

namespace PoolBench.Pools.UnderTest;

/// <summary>
/// The lock-free pool a user writes in a few lines over a <see cref="ConcurrentStack{T}"/>, filled
/// with <c>capacity</c> objects: when empty, a take creates a new object; a return beyond capacity
/// drops it. Every push allocates a stack node.
/// </summary>
internal readonly struct BoundedConcurrentStackPoolUnderTest : IPoolUnderTest
{
    public const string Name = "ConcurrentStack (bounded)";

    private readonly ConcurrentStack<BenchItem> _items = new();
    private readonly CapacityCount _count;

    public BoundedConcurrentStackPoolUnderTest(int capacity)
    {
        _count = new CapacityCount(capacity);
        for (int i = 0; i < capacity; i++)
        {
            Return(new BenchItem());
        }
    }

    public string Impl => Name;

    public BenchItem Take()
    {
        if (!_items.TryPop(out BenchItem? item))
        {
            return new BenchItem();
        }

        _count.Remove();
        return item;
    }

    public void Return(BenchItem item)
    {
        if (_count.TryAdd())
        {
            _items.Push(item);
        }
    }

    public void Dispose()
    {
    }
}
