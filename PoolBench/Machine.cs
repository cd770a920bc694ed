using System.Diagnostics;
using System.Reflection;
using System.Runtime;
using System.Runtime.InteropServices;
using PoolBench.Report;

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
        GC.GetConfigurationVariables().TryGetValue("Concurrent", out object? concurrent) ? concurrent is true : GCSettings.LatencyMode != GCLatencyMode.Batch,
        Environment.GetEnvironmentVariable("DOTNET_TieredPGO") is string pgo ? pgo != "0" : !AppContext.TryGetSwitch("System.Runtime.TieredPGO", out bool on) || on,
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
