using System.Text.Json;

namespace PoolBench.Report;

/// <summary>Writes a <see cref="ReportDocument"/> with snake_case keys; each result is written as its own type.</summary>
internal static class JsonReport
{
    private static readonly JsonSerializerOptions s_options = new()
    {
        PropertyNamingPolicy = JsonNamingPolicy.SnakeCaseLower,
        WriteIndented = true,
    };

    public static void Write(string path, ReportDocument document)
    {
        string? folder = Path.GetDirectoryName(Path.GetFullPath(path));
        if (folder is not null)
        {
            Directory.CreateDirectory(folder);
        }

        File.WriteAllText(path, JsonSerializer.Serialize(document, s_options) + "\n");
    }
}
