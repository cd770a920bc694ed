namespace PoolBench.Pools;

/// <summary>
/// Worker threads that run take+return pairs on one pool, released together for each run. The
/// benchmarks hold them through this interface, so that one benchmark method serves every
/// implementation; the rental loop itself stays generic over the pool's struct type.
/// </summary>
internal interface IRentalWorkers : IDisposable
{
    /// <summary>Releases the workers for one run of their share of the pairs and waits until all of them are done.</summary>
    void Run();
}
