using System.Collections.Concurrent;

namespace PoolBench.Pools.UnderTest;

/// <summary>
/// The pool a user writes in a few lines over a <see cref="ConcurrentBag{T}"/>, filled with
/// <c>capacity</c> objects: when empty, a take creates a new object; a return beyond capacity drops it.
/// </summary>
internal readonly struct BoundedConcurrentBagPoolUnderTest : IPoolUnderTest
{
    public const string Name = "ConcurrentBag (bounded)";

    private readonly ConcurrentBag<BenchItem> _items = [];
    private readonly CapacityCount _count;

    public BoundedConcurrentBagPoolUnderTest(int capacity)
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
        if (!_items.TryTake(out BenchItem? item))
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
            _items.Add(item);
        }
    }

    public void Dispose()
    {
    }
}
