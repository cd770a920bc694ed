using System.Diagnostics;
using NLog;
using PoolBench;
using PoolBench.Connections;
using PoolBench.Echo;
using PoolBench.Echo.Load;
using PoolBench.Echo.Soak;
using PoolBench.Report;
using PoolBench.Resp;
using PoolBench.Size;

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

if (args is [ConnectStorm.Role, string peer])
{
    // A connect storm in a process of its own, started by this program; its log goes to stderr as ours does.
    int status = await ConnectStorm.RunAsync(peer, Console.Out);
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
MicrobenchmarkRun.RunAndReport(options, report);

if (options.Runs("size"))
{
    new SizeScenario(options).Run(report);
}

if (options.Runs("echo"))
{
    await new EchoScenario(options).RunAsync(report);
}

if (options.Runs("resp"))
{
    await new RespScenario(options).RunAsync(report);
}

if (options.Runs("connections"))
{
    await new ConnectionsScenario(options).RunAsync(report);
}

if (options.Runs("soak"))
{
    await new SoakScenario(options).RunAsync(report);
}

JsonReport.Write(options, machine, report);
ResultPlots.Write(options.PlotsPath, report.Results, options.QuickLabel);

log.Info("{0} finished in {1:0.0} s with {2} failure(s)", options.Scenario, Stopwatch.GetElapsedTime(started).TotalSeconds, report.Failures.Count);
LogManager.Shutdown();
return report.Failures.Count == 0 ? 0 : 1;
