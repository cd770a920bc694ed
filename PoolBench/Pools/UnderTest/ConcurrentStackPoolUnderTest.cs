using System.Collections.Concurrent;

namespace PoolBench.Pools.UnderTest;

/// <summary>
/// The object pool of the .NET documentation's example over a <see cref="ConcurrentStack{T}"/> instead
/// of a bag, filled with <c>capacity</c> objects: a take creates a new object when the stack is empty,
/// and every return is kept. Unbounded, with no shared counter; every push allocates a stack node.
/// </summary>
internal readonly struct ConcurrentStackPoolUnderTest : IPoolUnderTest
{
    public const string Name = "ConcurrentStack";

    private readonly ConcurrentStack<BenchItem> _items;

    public ConcurrentStackPoolUnderTest(int capacity)
    {
        _items = new ConcurrentStack<BenchItem>(Enumerable.Range(0, capacity).Select(_ => new BenchItem()));
    }

    public string Impl => Name;

    public BenchItem Take() => _items.TryPop(out BenchItem? item) ? item : new BenchItem();

    public void Return(BenchItem item) => _items.Push(item);

    public void Dispose()
    {
    }
}
