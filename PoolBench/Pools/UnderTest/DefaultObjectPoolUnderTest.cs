using Microsoft.Extensions.ObjectPool;

namespace PoolBench.Pools.UnderTest;

/// <summary>
/// Microsoft.Extensions.ObjectPool's <see cref="DefaultObjectPool{T}"/> retaining <c>capacity</c>
/// objects: when empty, a take creates a new object; a return beyond capacity drops the object.
/// </summary>
internal readonly struct DefaultObjectPoolUnderTest : IPoolUnderTest
{
    public const string Name = "DefaultObjectPool";

    private readonly DefaultObjectPool<BenchItem> _pool;

    public DefaultObjectPoolUnderTest(int capacity)
    {
        var pool = new DefaultObjectPool<BenchItem>(new DefaultPooledObjectPolicy<BenchItem>(), capacity);
        BenchItem[] filling = Enumerable.Range(0, capacity).Select(_ => pool.Get()).ToArray();
        foreach (BenchItem item in filling)
        {
            pool.Return(item);
        }

        _pool = pool;
    }

    public string Impl => Name;

    public BenchItem Take() => _pool.Get();

    public void Return(BenchItem item) => _pool.Return(item);

    public void Dispose()
    {
    }
}
