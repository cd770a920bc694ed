using System.Globalization;
using BenchmarkDotNet.Analysers;
using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Engines;
using BenchmarkDotNet.Exporters;
using BenchmarkDotNet.Loggers;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Running;
using BenchmarkDotNet.Validators;

namespace PoolBench;

/// <summary>
/// Reports our pool's process-wide memory barriers per 1,000 take+return pairs, a column of its own
/// in BenchmarkDotNet's summaries: ns per pair on 2 cores does not show that each such barrier
/// interrupts every core the process runs on. The count is taken in the process that runs the
/// case by <see cref="MeasuredBarrierCount"/>, over the measured iterations only, and read here
/// from the file it appends to. Cases that do not record a count (the peers, which run none of our
/// barriers) get no value, which the summaries print as <c>NA</c>; a count of 0 prints as <c>-</c>.
/// </summary>
internal sealed class ProcessWideBarrierDiagnoser(string logPath) : IDiagnoser
{
    public static readonly IMetricDescriptor Descriptor = new BarriersPer1kPairs();

    public IEnumerable<string> Ids => [nameof(ProcessWideBarrierDiagnoser)];

    public IEnumerable<IExporter> Exporters => [];

    public IEnumerable<IAnalyser> Analysers => [];

    public RunMode GetRunMode(BenchmarkCase benchmarkCase) => RunMode.NoOverhead;

    public void Handle(HostSignal signal, DiagnoserActionParameters parameters)
    {
    }

    public IEnumerable<Metric> ProcessResults(DiagnoserResults results)
    {
        if (!File.Exists(logPath) || PoolsBenchmarks.BarrierKey(results.BenchmarkCase) is not string key)
        {
            yield break;
        }

        // The last line of the case wins: a case that ran more than once has one line per run.
        string? found = File.ReadLines(logPath).LastOrDefault(line => line.StartsWith(key + "\t", StringComparison.Ordinal));
        if (found?.Split('\t') is [_, string barriers, string pairs] && long.Parse(pairs, CultureInfo.InvariantCulture) > 0)
        {
            yield return new Metric(Descriptor, long.Parse(barriers, CultureInfo.InvariantCulture) * 1000.0 / long.Parse(pairs, CultureInfo.InvariantCulture));
        }
    }

    public void DisplayResults(ILogger logger)
    {
    }

    public IEnumerable<ValidationError> Validate(ValidationParameters validationParameters) => [];

    private sealed class BarriersPer1kPairs : IMetricDescriptor
    {
        public string Id => "ProcessWideBarriersPer1kPairs";

        public string DisplayName => "Barriers/1k pairs";

        public string Legend => "Process-wide memory barriers our pool ran per 1,000 take+return pairs, over all measured iterations";

        public string NumberFormat => "0.######";

        public UnitType UnitType => UnitType.Dimensionless;

        public string Unit => "Count";

        public bool TheGreaterTheBetter => false;

        public int PriorityInCategory => 0;

        public bool GetIsAvailable(Metric metric) => true;
    }
}
