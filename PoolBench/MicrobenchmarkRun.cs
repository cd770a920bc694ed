using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Engines;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Exporters.Csv;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using BenchmarkDotNet.Toolchains.InProcess.Emit;
using Perfolizer.Horology;

namespace PoolBench;

/// <summary>
/// Runs the micro scenarios' benchmark classes with BenchmarkDotNet, all in one run so that the
/// full run builds its benchmark project once. The full job runs each case in a process of its
/// own; the quick one runs every case once or twice in this process, to check every code path in
/// seconds, not to measure.
/// </summary>
internal static class MicrobenchmarkRun
{
    public static IReadOnlyList<Summary> Run(BenchOptions options, IReadOnlyList<Type> benchmarks)
    {
        string artifacts = Path.GetFullPath(options.ArtifactsPath);
        Directory.CreateDirectory(artifacts);
        string barrierLog = Path.Combine(artifacts, "process-wide-barriers.tsv");
        File.Delete(barrierLog);

        // Benchmark processes inherit it: it tells them where to record their barrier counts.
        Environment.SetEnvironmentVariable(MeasuredBarrierCount.LogVariable, barrierLog);

        IConfig config = ManualConfig.CreateEmpty()
            .AddJob(options.Quick ? QuickJob : FullJob)
            .AddColumnProvider(DefaultConfig.Instance.GetColumnProviders().ToArray())
            .AddDiagnoser(new ProcessWideBarrierDiagnoser(barrierLog))
            .AddExporter(MarkdownExporter.GitHub, CsvExporter.Default)
            .AddAnalyser(DefaultConfig.Instance.GetAnalysers().ToArray())
            .AddValidator(DefaultConfig.Instance.GetValidators().ToArray())
            .AddLogger(new BenchmarkProgressLog())
            .WithArtifactsPath(artifacts);
        return BenchmarkRunner.Run([.. benchmarks], config);
    }

    /// <summary>
    /// Seven measured iterations of at least 100 ms after five warm-ups, as the custom harness ran
    /// before; invocations are not unrolled, because one invocation runs many pairs and can take
    /// longer than an iteration; the empty-call overhead is not subtracted, being nothing against
    /// an invocation of milliseconds; and no iteration is dropped as an outlier, so min–max shows
    /// every measured iteration.
    /// </summary>
    private static Job FullJob => Job.Default
        .WithId("full")
        .WithLaunchCount(1)
        .WithWarmupCount(5)
        .WithIterationCount(7)
        .WithIterationTime(TimeInterval.FromMilliseconds(100))
        .WithUnrollFactor(1)
        .WithMinInvokeCount(1)
        .WithEvaluateOverhead(false)
        .WithOutlierMode(Perfolizer.Mathematics.OutlierDetection.OutlierMode.DontRemove);

    /// <summary>
    /// As BenchmarkDotNet's dry job: one cold invocation per case, plus the memory and threading
    /// diagnosers' one, in this process (no project to build, no process to start per case).
    /// </summary>
    private static Job QuickJob => Job.Dry
        .WithId("quick")
        .WithToolchain(InProcessEmitToolchain.DontLogOutput)
        .WithEvaluateOverhead(false)
        .WithOutlierMode(Perfolizer.Mathematics.OutlierDetection.OutlierMode.DontRemove);
}
