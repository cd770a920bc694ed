using System.Diagnostics;
using System.Reflection;
using System.Runtime;
using System.Runtime.InteropServices;

namespace PoolBench;

/// <summary>The machine block printed before every table: what the numbers were measured on.</summary>
internal sealed record Machine(
    string Os,
    int CpuCount,
    string Dotnet,
    string Architecture,
    bool GcServer,
    bool GcConcurrent,
    bool TieredPgo,
    string Build)
{
    public static Machine Describe() => new(
        RuntimeInformation.OSDescription,
        Environment.ProcessorCount,
        RuntimeInformation.FrameworkDescription,
        RuntimeInformation.ProcessArchitecture.ToString(),
        GCSettings.IsServerGC,
        AppContext.GetData("System.GC.Concurrent") as bool? ?? GCSettings.LatencyMode != GCLatencyMode.Batch,
        AppContext.GetData("System.Runtime.TieredPGO") as bool? ?? true,
        IsOptimized() ? "Release" : "Debug");

    public string ToMarkdown() => new MarkdownTable("machine", "")
        .Row("OS", Os)
        .Row("CPUs", CellText.Count(CpuCount))
        .Row(".NET", Dotnet)
        .Row("architecture", Architecture)
        .Row("GC", $"{(GcServer ? "server" : "workstation")}, {(GcConcurrent ? "concurrent" : "non-concurrent")}")
        .Row("tiered PGO", TieredPgo ? "on" : "off")
        .Row("build", Build)
        .ToString();

    private static bool IsOptimized() =>
        Assembly.GetEntryAssembly()?.GetCustomAttribute<DebuggableAttribute>()?.IsJITOptimizerDisabled != true;
}
