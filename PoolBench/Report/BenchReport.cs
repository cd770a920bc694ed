using NLog;

namespace PoolBench.Report;

/// <summary>Collects every scenario's results for the JSON document, and every failure for the exit code.</summary>
internal sealed class BenchReport
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private readonly List<object> _results = [];
    private readonly List<string> _failures = [];

    public IReadOnlyList<object> Results => _results;

    public IReadOnlyList<string> Failures => _failures;

    public void Add(object result) => _results.Add(result);

    public void Fail(string failure)
    {
        s_log.Error("FAILED: {0}", failure);
        _failures.Add(failure);
    }
}
