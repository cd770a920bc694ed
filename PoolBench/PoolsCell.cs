using NLog;

namespace PoolBench;

/// <summary>
/// One cell of the pools comparison (pattern, capacity, workers), measured for one implementation
/// at a time. <see cref="Measure{TPool}"/> is generic so each implementation runs its own loop.
/// </summary>
internal sealed class PoolsCell(BenchReport report, Measurement measurement, RentalPattern pattern, int capacity, int workers, double? oursNs)
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    /// <summary>Objects each worker holds at once: one in a short rental, its share of the capacity in a long one.</summary>
    public int Held => pattern == RentalPattern.Short ? 1 : Math.Max(1, capacity / workers);

    /// <summary>Measures and disposes <paramref name="pool"/>; null, with the failure reported, when a worker failed or hung.</summary>
    public PoolsResult? Measure<TPool>(TPool pool)
        where TPool : struct, IPoolUnderTest
    {
        string name = PoolsScenario.Name(pattern);
        s_log.Info("pools: {0}, {1} rental, capacity {2}, {3} worker(s)", pool.Impl, name, capacity, workers);
        try
        {
            using var rentals = new RentalWorkers<TPool>(pool, pattern, workers, Held);
            Sample sample = measurement.RunCalibrated(16L * workers * Held, rentals.Run);
            bool ours = pool.Impl == OurPoolUnderTest.Name;
            double? baseline = ours ? sample.MedianNs : oursNs;

            // Only our pool runs the gate that counts barriers; a peer's 0 would read as measured.
            double? barriers = ours ? sample.BarriersPer1kOps : null;
            return new PoolsResult(
                pool.Impl, name, capacity, workers, Held, sample.MedianNs, sample.MinNs, sample.MaxNs,
                sample.BytesPerOp, barriers, sample.Mops, sample.MedianNs / baseline, sample.OperationsPerIteration, sample.Iterations);
        }
        catch (Exception e) when (e is TimeoutException or InvalidOperationException)
        {
            report.Fail($"pools: {pool.Impl}, {name} rental, capacity {capacity}, {workers} workers: {e.Message} {e.InnerException?.Message}");
            return null;
        }
        finally
        {
            pool.Dispose();
        }
    }
}
