using BenchmarkDotNet.Attributes;
using PoolBench.Pools.UnderTest;

namespace PoolBench.Pools;

/// <summary>
/// Our <c>Pool&lt;T&gt;</c> against the pools a .NET user would pick instead: short and long
/// rentals, capacities 8, 64 and 1024, the worker counts of <see cref="WorkerCounts"/>. One benchmark
/// per implementation, each with its own global set-up, which fills the pool to capacity and starts
/// the workers; every invocation then releases the workers through a barrier for
/// <see cref="PairsPerInvocation"/> pairs in all, so BenchmarkDotNet's time per operation is the time
/// per take+return pair of all workers together. In a long rental each worker holds
/// <c>max(1, capacity / workers)</c> objects at once, so the workers together never hold more than
/// the capacity (or one each when there are more workers than objects): our pool, which waits at its
/// cap, cannot deadlock on a worker that holds part of a set.
/// </summary>
[MemoryDiagnoser]
[ThreadingDiagnoser]
public class PoolsBenchmarks
{
    /// <summary>
    /// Pairs of all workers in one invocation, large enough that waking the workers, once per
    /// invocation, is a small part of it even with 256 workers.
    /// </summary>
    public const int PairsPerInvocation = 1_280_000;

    /// <summary>The worker counts when <c>--workers</c> does not say.</summary>
    public static readonly IReadOnlyList<int> DefaultWorkerCounts = [1, 2, 4, 25];

    private IRentalWorkers? _workers;

    /// <summary>
    /// The worker counts of the cases, set from <c>--workers</c> before BenchmarkDotNet reads them; a
    /// case's process receives its own count as a value, not through this.
    /// </summary>
    public static IReadOnlyList<int> WorkerCounts { get; set; } = DefaultWorkerCounts;

    [Params(RentalPattern.Short, RentalPattern.Long)]
    public RentalPattern Pattern { get; set; }

    [Params(8, 64, 1024)]
    public int Capacity { get; set; }

    [ParamsSource(nameof(WorkerCounts))]
    public int Workers { get; set; }

    /// <summary>Objects each worker holds at once: one in a short rental, its share of the capacity in a long one.</summary>
    public int Held => HeldPerWorker(Pattern, Capacity, Workers);

    public static int HeldPerWorker(RentalPattern pattern, int capacity, int workers) =>
        pattern == RentalPattern.Short ? 1 : Math.Max(1, capacity / workers);

    [GlobalSetup(Target = nameof(Ours))]
    public void StartOurs() => Start(new OurPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(DefaultObjectPool))]
    public void StartDefaultObjectPool() => Start(new DefaultObjectPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(ConcurrentBag))]
    public void StartConcurrentBag() => Start(new ConcurrentBagPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(BoundedConcurrentBag))]
    public void StartBoundedConcurrentBag() => Start(new BoundedConcurrentBagPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(ConcurrentStack))]
    public void StartConcurrentStack() => Start(new ConcurrentStackPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(BoundedConcurrentStack))]
    public void StartBoundedConcurrentStack() => Start(new BoundedConcurrentStackPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(New))]
    public void StartNew() => Start(new NoPoolUnderTest());

    [GlobalCleanup]
    public void Stop()
    {
        _workers?.Dispose();
        _workers = null;
    }

    [Benchmark(Description = OurPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation)]
    public void Ours() => _workers!.Run();

    [Benchmark(Description = DefaultObjectPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation, Baseline = true)]
    public void DefaultObjectPool() => _workers!.Run();

    [Benchmark(Description = ConcurrentBagPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation)]
    public void ConcurrentBag() => _workers!.Run();

    [Benchmark(Description = BoundedConcurrentBagPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation)]
    public void BoundedConcurrentBag() => _workers!.Run();

    [Benchmark(Description = ConcurrentStackPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation)]
    public void ConcurrentStack() => _workers!.Run();

    [Benchmark(Description = BoundedConcurrentStackPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation)]
    public void BoundedConcurrentStack() => _workers!.Run();

    [Benchmark(Description = NoPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation)]
    public void New() => _workers!.Run();

    private void Start<TPool>(TPool pool)
        where TPool : struct, IPoolUnderTest =>
        _workers = new RentalWorkers<TPool>(pool, Pattern, Workers, Held, PairsPerInvocation);
}
