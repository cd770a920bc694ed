using System.Text.Json;
using NLog;

namespace PoolBench.Report;

/// <summary>Writes the JSON document with snake_case keys: the scenario that ran, the machine, one object per measured
/// cell (each written as its own type) and the failures.</summary>
internal static class JsonReport
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    private static readonly JsonSerializerOptions s_options = new()
    {
        PropertyNamingPolicy = JsonNamingPolicy.SnakeCaseLower,
        WriteIndented = true,
    };

    /// <summary>Writes the document to <c>--json</c>'s path; does nothing without one.</summary>
    public static void Write(BenchOptions options, Machine machine, BenchReport report)
    {
        if (options.JsonPath is not { } path)
        {
            return;
        }

        string? folder = Path.GetDirectoryName(Path.GetFullPath(path));
        if (folder is not null)
        {
            Directory.CreateDirectory(folder);
        }

        var document = new Document(options.Scenario, machine, report.Results, report.Failures);
        File.WriteAllText(path, JsonSerializer.Serialize(document, s_options) + "\n");
        s_log.Info("results written to {0}", path);
    }

    private sealed record Document(string Scenario, Machine Machine, IReadOnlyList<object> Results, IReadOnlyList<string> Failures);
}
