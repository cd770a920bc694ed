using System.Diagnostics;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Validators;
using NLog;
using PoolBench;
using PoolBench.Article;
using PoolBench.Echo;
using PoolBench.Echo.Load;
using PoolBench.Echo.Soak;
using PoolBench.Pools;
using PoolBench.Report;

LogManager.Setup().LoadConfiguration(builder =>
    builder.ForLogger().FilterMinLevel(NLog.LogLevel.Info).WriteToConsole("${date:format=HH\\:mm\\:ss} ${message}${onexception: ${exception}}", stderr: true));
Logger log = LogManager.GetLogger("PoolBench");

if (args is [EchoLoadChild.Role])
{
    // A child client of the echo load's --clients, started by this program; its log goes to stderr as ours does.
    int status = await EchoLoadChild.RunAsync(Console.In, Console.Out);
    LogManager.Shutdown();
    return status;
}

if (args is ["--help"] or ["-h"])
{
    Console.WriteLine(BenchOptions.Usage);
    return 0;
}

BenchOptions options;
try
{
    options = BenchOptions.Parse(args);
}
catch (ArgumentException e)
{
    Console.Error.WriteLine($"PoolBench: {e.Message}");
    Console.Error.WriteLine(BenchOptions.Usage);
    return 2;
}

long started = Stopwatch.GetTimestamp();
Machine machine = Machine.Describe();
Console.WriteLine("# PoolBench" + (options.Quick ? " (quick run: shrunk sizes, for smoke tests only)" : ""));
Console.WriteLine();
Console.WriteLine(machine.ToMarkdown());

var report = new BenchReport();
var microbenchmarks = new List<Type>();
if (options.Runs("article"))
{
    microbenchmarks.Add(ArticleScenario.Benchmarks);
}

if (options.Runs("pools"))
{
    microbenchmarks.AddRange(PoolsScenario.Benchmarks);
    PoolsBenchmarks.WorkerCounts = options.Workers ?? PoolsBenchmarks.DefaultWorkerCounts;
}

if (microbenchmarks.Count > 0)
{
    IReadOnlyList<Summary> summaries = MicrobenchmarkRun.Run(options, microbenchmarks);
    Summary? SummaryOf(Type benchmarks)
    {
        Summary? summary = summaries.FirstOrDefault(s => s.BenchmarksCases.Any(c => c.Descriptor.Type == benchmarks));
        // A filter may leave a class without cases; otherwise it means the class did not run.
        if (summary is null && options.Filters.Count == 0)
        {
            report.Fail($"BenchmarkDotNet ran no case of {benchmarks.Name}");
        }

        return summary;
    }

    if (options.Filters.Count > 0 && !summaries.Any(s => s.BenchmarksCases.Length > 0))
    {
        // A mistyped filter would otherwise print empty tables and exit 0.
        report.Fail($"no benchmark case matches --filter {string.Join(" --filter ", options.Filters)}");
    }

    foreach (ValidationError error in summaries.SelectMany(s => s.ValidationErrors).Where(e => e.IsCritical))
    {
        report.Fail($"BenchmarkDotNet: {error.Message}");
    }

    if (options.Runs("article") && SummaryOf(typeof(ArticleBenchmarks)) is Summary article)
    {
        new ArticleScenario(options).Report(article, report);
    }

    if (options.Runs("pools"))
    {
        new PoolsScenario(options).Report(SummaryOf(typeof(PoolsBenchmarks)), SummaryOf(typeof(PoolOptionsCostBenchmarks)), report);
    }
}

if (options.Runs("echo"))
{
    await new EchoScenario(options).RunAsync(report);
}

if (options.Runs("soak"))
{
    await new SoakScenario(options).RunAsync(report);
}

if (options.JsonPath is not null)
{
    JsonReport.Write(options.JsonPath, new ReportDocument(options.Scenario, machine, report.Results, report.Failures));
    log.Info("results written to {0}", options.JsonPath);
}

ResultPlots.Write(options.PlotsPath, report.Results, options.QuickLabel);

log.Info("{0} finished in {1:0.0} s with {2} failure(s)", options.Scenario, Stopwatch.GetElapsedTime(started).TotalSeconds, report.Failures.Count);
LogManager.Shutdown();
return report.Failures.Count == 0 ? 0 : 1;
