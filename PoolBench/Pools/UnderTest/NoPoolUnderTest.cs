namespace PoolBench.Pools.UnderTest;

/// <summary>No pool at all: every take is <c>new</c>, every return leaves the object to the GC.</summary>
internal readonly struct NoPoolUnderTest : IPoolUnderTest
{
    public const string Name = "new";

    public string Impl => Name;

    public BenchItem Take() => new();

    public void Return(BenchItem item)
    {
    }

    public void Dispose()
    {
    }
}
