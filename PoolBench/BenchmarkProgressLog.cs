using System.Text;
using BenchmarkDotNet.Loggers;
using NLog;

namespace PoolBench;

/// <summary>
/// Passes BenchmarkDotNet's log to PoolBench's progress log (stderr) in brief: which case starts,
/// how many remain, and every error. The full log goes to the log file in the artifacts folder.
/// </summary>
internal sealed class BenchmarkProgressLog : BenchmarkDotNet.Loggers.ILogger
{
    private const string CaseStart = "// Benchmark: ";
    private static readonly Logger s_log = LogManager.GetLogger("BenchmarkDotNet");
    private readonly StringBuilder _line = new();
    private bool _lineIsError;

    public string Id => nameof(BenchmarkProgressLog);

    public int Priority => 0;

    public void Write(LogKind logKind, string text)
    {
        _line.Append(text);
        _lineIsError |= logKind == LogKind.Error;
    }

    public void WriteLine() => EndLine();

    public void WriteLine(LogKind logKind, string text)
    {
        Write(logKind, text);
        EndLine();
    }

    public void Flush()
    {
    }

    private void EndLine()
    {
        string line = _line.ToString();
        _line.Clear();
        if (_lineIsError)
        {
            s_log.Error(line);
        }
        else if (line.StartsWith(CaseStart, StringComparison.Ordinal))
        {
            s_log.Info(WithoutJob(line[CaseStart.Length..]));
        }
        else if (line.StartsWith("// ** Remained ", StringComparison.Ordinal))
        {
            s_log.Info(line.Trim('/', '*', ' '));
        }

        _lineIsError = false;
    }

    /// <summary>"Type.Method: job(characteristics) [parameters]" without the job, which is the same for every case.</summary>
    private static string WithoutJob(string benchmarkCase)
    {
        int job = benchmarkCase.IndexOf(": ", StringComparison.Ordinal);
        int parameters = benchmarkCase.LastIndexOf(" [", StringComparison.Ordinal);
        return job < 0 ? benchmarkCase : benchmarkCase[..job] + (parameters > job ? benchmarkCase[parameters..] : "");
    }
}
