namespace PoolBench;

/// <summary>
/// The iterations of one cell reduced to what the tables print: the median, the fastest and the
/// slowest time per operation, the median allocation per operation, and the process-wide barriers
/// per 1,000 operations over all iterations together (null when the runs do not count them).
/// </summary>
internal sealed record Sample(
    double MedianNs, double MinNs, double MaxNs, double BytesPerOp, double? BarriersPer1kOps, long OperationsPerIteration, int Iterations)
{
    public static Sample From(IReadOnlyList<RunResult> runs)
    {
        double[] ns = runs.Select(r => r.Elapsed.TotalNanoseconds / r.Operations).Order().ToArray();
        double[] bytes = runs.Select(r => (double)r.AllocatedBytes / r.Operations).Order().ToArray();
        return new Sample(Median(ns), ns[0], ns[^1], Median(bytes), BarriersPer1k(runs), runs[0].Operations, runs.Count);
    }

    public double MedianSeconds => MedianNs * OperationsPerIteration / 1e9;

    public double MinSeconds => MinNs * OperationsPerIteration / 1e9;

    public double MaxSeconds => MaxNs * OperationsPerIteration / 1e9;

    /// <summary>Millions of operations per second at the median.</summary>
    public double Mops => 1e3 / MedianNs;

    /// <summary>The median of values sorted in ascending order.</summary>
    public static double Median(double[] sorted) =>
        sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[sorted.Length / 2 - 1] + sorted[sorted.Length / 2]) / 2;

    /// <summary>
    /// All barriers of all runs per 1,000 of all their operations, not a median: barriers are rare and
    /// bursty, so the median run can show none while other runs pay for many.
    /// </summary>
    private static double? BarriersPer1k(IReadOnlyList<RunResult> runs) =>
        runs.All(r => r.ProcessWideBarriers is not null)
            ? runs.Sum(r => r.ProcessWideBarriers!.Value) * 1000.0 / runs.Sum(r => r.Operations)
            : null;
}
