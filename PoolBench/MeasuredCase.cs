using BenchmarkDotNet.Engines;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using PoolBench.Report;

namespace PoolBench;

/// <summary>
/// One BenchmarkDotNet case reduced to what PoolBench's tables and JSON print: its name (the
/// benchmark's description), the median, fastest and slowest time per operation over the measured
/// iterations, the bytes allocated per operation (over the memory diagnoser's run), the operations
/// of one measured iteration, how many iterations were measured, and its other metrics by id.
/// </summary>
internal sealed record MeasuredCase(
    string Name,
    BenchmarkDotNet.Parameters.ParameterInstances Parameters,
    double MedianNs,
    double MinNs,
    double MaxNs,
    double? BytesPerOp,
    long OperationsPerIteration,
    int Iterations,
    IReadOnlyDictionary<string, Metric> Metrics)
{
    /// <summary>Millions of operations per second at the median.</summary>
    public double Mops => 1e3 / MedianNs;

    /// <summary>The measured cases of a summary; every case without a result is a failure of <paramref name="scenario"/>.</summary>
    public static List<MeasuredCase> From(Summary summary, BenchReport report, string scenario)
    {
        var measured = new List<MeasuredCase>();
        foreach (BenchmarkCase benchmarkCase in summary.BenchmarksCases)
        {
            // A case that failed to build or to start has no report at all.
            if (summary[benchmarkCase] is BenchmarkReport caseReport && From(caseReport) is MeasuredCase result)
            {
                measured.Add(result);
            }
            else
            {
                report.Fail($"{scenario}: {benchmarkCase.DisplayInfo} has no result");
            }
        }

        return measured;
    }

    private static MeasuredCase? From(BenchmarkReport report)
    {
        if (!report.Success || report.ResultStatistics is not { } statistics)
        {
            return null;
        }

        Measurement[] actual = report.AllMeasurements.Where(m => m.Is(IterationMode.Workload, IterationStage.Actual)).ToArray();
        long? allocated = report.GcStats.GetTotalAllocatedBytes(excludeAllocationQuantumSideEffects: false);
        return new MeasuredCase(
            // BenchmarkDotNet quotes a description that holds a comma.
            report.BenchmarkCase.Descriptor.WorkloadMethodDisplayInfo.Trim('\''),
            report.BenchmarkCase.Parameters,
            statistics.Median,
            statistics.Min,
            statistics.Max,
            allocated is long bytes && report.GcStats.TotalOperations > 0 ? (double)bytes / report.GcStats.TotalOperations : null,
            actual.Length > 0 ? actual[0].Operations : 0,
            actual.Length,
            report.Metrics);
    }

    public T Parameter<T>(string name) => (T)Parameters[name];
}
