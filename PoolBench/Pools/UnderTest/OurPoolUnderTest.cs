namespace PoolBench.Pools.UnderTest;

/// <summary>Our <c>Pool&lt;T&gt;</c>: when all <c>capacity</c> objects are out, a take waits for a return.</summary>
internal readonly struct OurPoolUnderTest : IPoolUnderTest
{
    public const string Name = "Pool<T>";

    private readonly BenchItemPool _pool;

    /// <summary>Our pool with default options, as every comparison cell runs it.</summary>
    public OurPoolUnderTest(int capacity)
        : this(new BenchItemPool(capacity))
    {
    }

    /// <summary>A pool configured by the caller (the options-cost cells).</summary>
    public OurPoolUnderTest(BenchItemPool pool)
    {
        _pool = pool;
    }

    public string Impl => Name;

    public BenchItem Take() => _pool.TakeSlot().Object;

    public void Return(BenchItem item) => _pool.Release(item.Slot!);

    public void Dispose() => _pool.Dispose();
}
