using System.Diagnostics.Metrics;
using BenchmarkDotNet.Attributes;
using PoolBench.Pools.UnderTest;
using PoolLib;

namespace PoolBench.Pools;

/// <summary>
/// What our pool's options cost: the one-worker short-rental cell at capacity 64 for
/// <c>DefaultObjectPool</c> (the baseline), and for ours with default options, with a listener on
/// its meter, with the options that act on every release, with leak detection (its default sampling,
/// no rental traced, every rental traced; and its default sampling against default options where each pair does about
/// 20 us of work, so that takes are rare enough to be traced more often), with abandoned rentals taken back, and with <c>ValidateAfterIdle</c>
/// (a synchronous take, which pays only the release's clock read).
/// </summary>
[MemoryDiagnoser]
[ThreadingDiagnoser]
public class PoolOptionsCostBenchmarks
{
    public const int Capacity = 64;

    /// <summary>
    /// Smaller than the comparison's: leak detection that traces every rental captures a stack trace
    /// on every take, and one worker is woken per invocation, which costs little.
    /// </summary>
    public const int PairsPerInvocation = 128_000;

    /// <summary>How the names of the slow-take cells end.</summary>
    public const string SlowTakesSuffix = ", slow takes";

    /// <summary>The slow-take cell the others compare with: default options.</summary>
    public const string SlowTakesName = "Pool<T>, default options" + SlowTakesSuffix;

    /// <summary>The pairs of the slow-take cells, each with <see cref="SpinsPerSlowPair"/> of work: about 100 ms.</summary>
    public const int SlowPairsPerInvocation = 5_000;

    /// <summary>Work between a slow take and its return, in <see cref="Thread.SpinWait"/> iterations: about 20 us.</summary>
    public const int SpinsPerSlowPair = 600;

    private IRentalWorkers? _workers;
    private MeterListener? _listener;

    [GlobalSetup(Target = nameof(DefaultObjectPool))]
    public void StartDefaultObjectPool() => Start(new DefaultObjectPoolUnderTest(Capacity));

    [GlobalSetup(Target = nameof(DefaultOptions))]
    public void StartDefaultOptions() => Start(new OurPoolUnderTest(new BenchItemPool(Capacity)));

    [GlobalSetup(Target = nameof(MeterListener))]
    public void StartMeterListener()
    {
        _listener = ListenToPoolLib();
        Start(new OurPoolUnderTest(new BenchItemPool(Capacity)));
    }

    [GlobalSetup(Target = nameof(MaxObjectLifetimeAndIdleTimeout))]
    public void StartMaxObjectLifetimeAndIdleTimeout()
    {
        var releaseChecks = new PoolOptions
        {
            MaxCapacity = Capacity,
            MaxObjectLifetime = TimeSpan.FromHours(1),
            IdleTimeout = TimeSpan.FromMinutes(1),
            MinIdle = 1,
        };
        Start(new OurPoolUnderTest(new BenchItemPool(releaseChecks)));
    }

    [GlobalSetup(Target = nameof(LeakDetectionThreshold))]
    public void StartLeakDetectionThreshold() =>
        Start(new OurPoolUnderTest(new BenchItemPool(new PoolOptions { MaxCapacity = Capacity, LeakDetectionThreshold = TimeSpan.FromMinutes(1) })));

    [GlobalSetup(Target = nameof(SlowTakes))]
    public void StartSlowTakes() => StartSlow(new OurPoolUnderTest(new BenchItemPool(Capacity)));

    [GlobalSetup(Target = nameof(LeakDetectionSlowTakes))]
    public void StartLeakDetectionSlowTakes() =>
        StartSlow(new OurPoolUnderTest(new BenchItemPool(new PoolOptions { MaxCapacity = Capacity, LeakDetectionThreshold = TimeSpan.FromMinutes(1) })));

    [GlobalSetup(Target = nameof(LeakDetectionTracingNoRental))]
    public void StartLeakDetectionTracingNoRental() =>
        Start(new OurPoolUnderTest(new BenchItemPool(new PoolOptions { MaxCapacity = Capacity, LeakDetectionThreshold = TimeSpan.FromMinutes(1), LeakSamplingInterval = 0 })));

    [GlobalSetup(Target = nameof(LeakDetectionTracingEveryRental))]
    public void StartLeakDetectionTracingEveryRental() =>
        Start(new OurPoolUnderTest(new BenchItemPool(new PoolOptions { MaxCapacity = Capacity, LeakDetectionThreshold = TimeSpan.FromMinutes(1), LeakSamplingInterval = 1 })));

    [GlobalSetup(Target = nameof(AbandonedRentalTimeout))]
    public void StartAbandonedRentalTimeout() =>
        Start(new OurPoolUnderTest(new BenchItemPool(new PoolOptions { MaxCapacity = Capacity, AbandonedRentalTimeout = TimeSpan.FromMinutes(1) })));

    [GlobalSetup(Target = nameof(ValidateAfterIdle))]
    public void StartValidateAfterIdle() =>
        Start(new OurPoolUnderTest(new BenchItemPool(new PoolOptions { MaxCapacity = Capacity, ValidateAfterIdle = TimeSpan.FromSeconds(1) })));

    [GlobalCleanup]
    public void Stop()
    {
        _workers?.Dispose();
        _workers = null;
        _listener?.Dispose();
        _listener = null;
    }

    [Benchmark(Description = DefaultObjectPoolUnderTest.Name, OperationsPerInvoke = PairsPerInvocation, Baseline = true)]
    public void DefaultObjectPool() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, default options", OperationsPerInvoke = PairsPerInvocation)]
    public void DefaultOptions() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, MeterListener on PoolLib", OperationsPerInvoke = PairsPerInvocation)]
    public void MeterListener() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, MaxObjectLifetime + IdleTimeout", OperationsPerInvoke = PairsPerInvocation)]
    public void MaxObjectLifetimeAndIdleTimeout() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, LeakDetectionThreshold", OperationsPerInvoke = PairsPerInvocation)]
    public void LeakDetectionThreshold() => _workers!.Run();

    [Benchmark(Description = SlowTakesName, OperationsPerInvoke = SlowPairsPerInvocation)]
    public void SlowTakes() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, LeakDetectionThreshold" + SlowTakesSuffix, OperationsPerInvoke = SlowPairsPerInvocation)]
    public void LeakDetectionSlowTakes() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, LeakDetectionThreshold, LeakSamplingInterval 0", OperationsPerInvoke = PairsPerInvocation)]
    public void LeakDetectionTracingNoRental() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, LeakDetectionThreshold, LeakSamplingInterval 1", OperationsPerInvoke = PairsPerInvocation)]
    public void LeakDetectionTracingEveryRental() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, AbandonedRentalTimeout", OperationsPerInvoke = PairsPerInvocation)]
    public void AbandonedRentalTimeout() => _workers!.Run();

    [Benchmark(Description = "Pool<T>, ValidateAfterIdle", OperationsPerInvoke = PairsPerInvocation)]
    public void ValidateAfterIdle() => _workers!.Run();

    /// <summary>A listener that enables every instrument of the PoolLib meter and takes every measurement, as a metrics exporter would.</summary>
    private static MeterListener ListenToPoolLib()
    {
        var listener = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == "PoolLib")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>(static (instrument, value, tags, state) => { });
        listener.SetMeasurementEventCallback<double>(static (instrument, value, tags, state) => { });
        listener.Start();
        return listener;
    }

    private void Start<TPool>(TPool pool)
        where TPool : struct, IPoolUnderTest =>
        _workers = new RentalWorkers<TPool>(pool, RentalPattern.Short, workers: 1, held: 1, PairsPerInvocation);

    private void StartSlow<TPool>(TPool pool)
        where TPool : struct, IPoolUnderTest =>
        _workers = new RentalWorkers<TPool>(pool, RentalPattern.Short, workers: 1, held: 1, SlowPairsPerInvocation, SpinsPerSlowPair);
}
