namespace PoolBench.Pools.UnderTest;

/// <summary>
/// One pool implementation as the <c>pools</c> scenario drives it. Implementations are structs
/// and the rental loop is generic over them, so the JIT compiles one loop per implementation with
/// direct, inlinable calls: no implementation pays for interface dispatch, and none is favoured
/// by a call site whose profile another implementation filled.
/// </summary>
internal interface IPoolUnderTest : IDisposable
{
    /// <summary>The name in the tables and the JSON <c>impl</c> key.</summary>
    string Impl { get; }

    BenchItem Take();

    void Return(BenchItem item);
}
