using System.Collections.Concurrent;

namespace PoolBench.Pools.UnderTest;

/// <summary>
/// The object pool of the .NET documentation's example over a <see cref="ConcurrentBag{T}"/>, filled
/// with <c>capacity</c> objects: a take creates a new object when the bag is empty, and every return
/// is kept. Unbounded, with no shared counter.
/// </summary>
internal readonly struct ConcurrentBagPoolUnderTest : IPoolUnderTest
{
    public const string Name = "ConcurrentBag";

    private readonly ConcurrentBag<BenchItem> _items;

    public ConcurrentBagPoolUnderTest(int capacity)
    {
        _items = new ConcurrentBag<BenchItem>(Enumerable.Range(0, capacity).Select(_ => new BenchItem()));
    }

    public string Impl => Name;

    public BenchItem Take() => _items.TryTake(out BenchItem? item) ? item : new BenchItem();

    public void Return(BenchItem item) => _items.Add(item);

    public void Dispose()
    {
    }
}
