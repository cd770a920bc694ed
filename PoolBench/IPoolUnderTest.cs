namespace PoolBench;

/// <summary>
/// One pool implementation as the <c>pools</c> scenario drives it. Every implementation is called
/// through this interface, so the dispatch cost is the same for all of them.
/// </summary>
internal interface IPoolUnderTest : IDisposable
{
    /// <summary>The name in the tables and the JSON <c>impl</c> key.</summary>
    string Impl { get; }

    BenchItem Take();

    void Return(BenchItem item);
}
