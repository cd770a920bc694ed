using System.Diagnostics;
using NLog;
using PoolBench;

LogManager.Setup().LoadConfiguration(builder =>
    builder.ForLogger().FilterMinLevel(NLog.LogLevel.Info).WriteToConsole("${date:format=HH\\:mm\\:ss} ${message}${onexception: ${exception}}", stderr: true));
Logger log = LogManager.GetLogger("PoolBench");

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
if (options.Runs("article"))
{
    new ArticleScenario(options).Run(report);
}

if (options.Runs("pools"))
{
    new PoolsScenario(options).Run(report);
}

if (options.Runs("echo"))
{
    await new EchoScenario(options).RunAsync(report);
}

if (options.JsonPath is not null)
{
    JsonReport.Write(options.JsonPath, new ReportDocument(options.Scenario, machine, report.Results, report.Failures));
    log.Info("results written to {0}", options.JsonPath);
}

log.Info("{0} finished in {1:0.0} s with {2} failure(s)", options.Scenario, Stopwatch.GetElapsedTime(started).TotalSeconds, report.Failures.Count);
LogManager.Shutdown();
return report.Failures.Count == 0 ? 0 : 1;
