namespace PoolBench;

/// <summary>
/// The iterations of one cell reduced to what the tables print: the median, the fastest and the
/// slowest time per operation, and the median allocation per operation.
/// </summary>
internal sealed record Sample(double MedianNs, double MinNs, double MaxNs, double BytesPerOp, long OperationsPerIteration, int Iterations)
{
    public static Sample From(IReadOnlyList<RunResult> runs)
    {
        double[] ns = runs.Select(r => r.Elapsed.TotalNanoseconds / r.Operations).Order().ToArray();
        double[] bytes = runs.Select(r => (double)r.AllocatedBytes / r.Operations).Order().ToArray();
        return new Sample(Median(ns), ns[0], ns[^1], Median(bytes), runs[0].Operations, runs.Count);
    }

    public double MedianSeconds => MedianNs * OperationsPerIteration / 1e9;

    public double MinSeconds => MinNs * OperationsPerIteration / 1e9;

    public double MaxSeconds => MaxNs * OperationsPerIteration / 1e9;

    /// <summary>Millions of operations per second at the median.</summary>
    public double Mops => 1e3 / MedianNs;

    /// <summary>The median of values sorted in ascending order.</summary>
    public static double Median(double[] sorted) =>
        sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[sorted.Length / 2 - 1] + sorted[sorted.Length / 2]) / 2;
}
