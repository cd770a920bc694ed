namespace PoolBench;

/// <summary>Our <c>Pool&lt;T&gt;</c>: when all <c>capacity</c> objects are out, a take waits for a return.</summary>
internal readonly struct OurPoolUnderTest(int capacity) : IPoolUnderTest
{
    public const string Name = "Pool<T>";

    private readonly BenchItemPool _pool = new(capacity);

    public string Impl => Name;

    public BenchItem Take() => _pool.TakeSlot().Object;

    public void Return(BenchItem item) => _pool.Release(item.Slot!);

    public void Dispose() => _pool.Dispose();
}
