using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Exporters.Csv;
using BenchmarkDotNet.Filters;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using BenchmarkDotNet.Toolchains.InProcess.Emit;
using BenchmarkDotNet.Validators;
using NLog;
using Perfolizer.Horology;
using PoolBench.Article;
using PoolBench.Pools;
using PoolBench.Report;

namespace PoolBench;

/// <summary>
/// Runs the micro scenarios' benchmark classes with BenchmarkDotNet, all in one run so that the
/// full run builds its benchmark project once. The full job runs each case in a process of its
/// own; the quick one runs every case once in this process, to check every code path in seconds,
/// not to measure.
/// </summary>
/// <remarks>
/// For a process per case, BenchmarkDotNet generates a project beside PoolBench's binaries that
/// references PoolBench.csproj, which it looks for under the solution folder it finds from the
/// current directory. The run therefore starts in the folder of Pools.sln above this program's
/// binaries, wherever PoolBench was started from; without the source tree (a copied binary) the
/// full job runs in this process instead.
/// </remarks>
internal static class MicrobenchmarkRun
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    /// <summary>
    /// Runs the benchmark classes of the micro scenarios the options ask for (article, pools), all in one run, and
    /// prints and reports each scenario's tables. A class that did not run, a filter that matches no case and a
    /// critical validation error are failures.
    /// </summary>
    public static void RunAndReport(BenchOptions options, BenchReport report)
    {
        var benchmarks = new List<Type>();
        if (options.Runs("article"))
        {
            benchmarks.Add(ArticleScenario.Benchmarks);
        }

        if (options.Runs("pools"))
        {
            benchmarks.AddRange(PoolsScenario.Benchmarks);
            PoolsBenchmarks.WorkerCounts = options.Workers ?? PoolsBenchmarks.DefaultWorkerCounts;
        }

        if (benchmarks.Count == 0)
        {
            return;
        }

        IReadOnlyList<Summary> summaries = Run(options, benchmarks);
        Check(summaries, options, report);
        if (options.Runs("article") && SummaryOf(summaries, typeof(ArticleBenchmarks), options, report) is Summary article)
        {
            new ArticleScenario(options).Report(article, report);
        }

        if (options.Runs("pools"))
        {
            new PoolsScenario(options).Report(
                SummaryOf(summaries, typeof(PoolsBenchmarks), options, report), SummaryOf(summaries, typeof(PoolOptionsCostBenchmarks), options, report), report);
        }
    }

    private static void Check(IReadOnlyList<Summary> summaries, BenchOptions options, BenchReport report)
    {
        if (options.Filters.Count > 0 && !summaries.Any(s => s.BenchmarksCases.Length > 0))
        {
            // A mistyped filter would otherwise print empty tables and exit 0.
            report.Fail($"no benchmark case matches --filter {string.Join(" --filter ", options.Filters)}");
        }

        foreach (ValidationError error in summaries.SelectMany(s => s.ValidationErrors).Where(e => e.IsCritical))
        {
            report.Fail($"BenchmarkDotNet: {error.Message}");
        }
    }

    private static Summary? SummaryOf(IReadOnlyList<Summary> summaries, Type benchmarks, BenchOptions options, BenchReport report)
    {
        Summary? summary = summaries.FirstOrDefault(s => s.BenchmarksCases.Any(c => c.Descriptor.Type == benchmarks));
        // A filter may leave a class without cases; otherwise it means the class did not run.
        if (summary is null && options.Filters.Count == 0)
        {
            report.Fail($"BenchmarkDotNet ran no case of {benchmarks.Name}");
        }

        return summary;
    }

    private static IReadOnlyList<Summary> Run(BenchOptions options, IReadOnlyList<Type> benchmarks)
    {
        string artifacts = Path.GetFullPath(options.ArtifactsPath);
        Directory.CreateDirectory(artifacts);
        string? solutionFolder = SolutionFolder();
        Job job = options.Quick ? QuickJob : solutionFolder is null ? FullJob.WithToolchain(InProcessEmitToolchain.DontLogOutput) : FullJob;
        if (!options.Quick && solutionFolder is null)
        {
            s_log.Warn("Pools.sln not found above {0}: every benchmark case runs in this process", AppContext.BaseDirectory);
        }

        ManualConfig config = ManualConfig.CreateEmpty()
            .AddJob(job)
            .AddColumnProvider(DefaultConfig.Instance.GetColumnProviders().ToArray())
            .AddExporter(MarkdownExporter.GitHub, CsvExporter.Default)
            .AddAnalyser(DefaultConfig.Instance.GetAnalysers().ToArray())
            .AddValidator(DefaultConfig.Instance.GetValidators().ToArray())
            .AddLogger(new BenchmarkProgressLog())
            .WithArtifactsPath(artifacts);
        if (options.Filters.Count > 0)
        {
            config = config.AddFilter(new GlobFilter([.. options.Filters]));
        }

        string startedIn = Directory.GetCurrentDirectory();
        try
        {
            Directory.SetCurrentDirectory(solutionFolder ?? startedIn);
            return BenchmarkRunner.Run([.. benchmarks], config);
        }
        finally
        {
            Directory.SetCurrentDirectory(startedIn);
        }
    }

    private static string? SolutionFolder()
    {
        for (DirectoryInfo? folder = new(AppContext.BaseDirectory); folder is not null; folder = folder.Parent)
        {
            if (File.Exists(Path.Combine(folder.FullName, "Pools.sln")))
            {
                return folder.FullName;
            }
        }

        return null;
    }

    /// <summary>
    /// Seven measured iterations of at least 100 ms after ten warm-ups, because cells with several
    /// workers reach their tier-1 speed only after a few. Invocations are not unrolled, because one
    /// invocation runs many pairs and can take longer than an iteration; the empty-call overhead is
    /// not subtracted, being nothing against an invocation of thousands of requests or pairs; and no
    /// iteration is dropped as an outlier, so min–max shows every measured iteration. On one CPU the runtime
    /// waits ten times longer before it recompiles hot methods (TC_DelaySingleProcMultiplier); each case's
    /// process sets it to 1, so that pinned to one core, as on more, the warm-ups reach the recompiled code.
    /// </summary>
    private static Job FullJob => Job.Default
        .WithId("full")
        .WithEnvironmentVariable("DOTNET_TC_DelaySingleProcMultiplier", "1")
        .WithLaunchCount(1)
        .WithWarmupCount(10)
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
