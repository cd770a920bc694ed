using System.Diagnostics;
using System.Text.Json;

namespace PoolBench.Connections;

/// <summary>
/// Runs one pool's connect storm in a child process (<c>dotnet PoolBench.dll connect-storm PEER</c>, see
/// <see cref="ConnectStorm"/>), which inherits this process's CPU affinity, and reads its result.
/// </summary>
internal static class ConnectStormProcess
{
    /// <summary>The storm's own 60 s limit, the warm-up storm and the process's start, with a margin.</summary>
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(120);

    /// <exception cref="InvalidOperationException">The process failed or printed no result.</exception>
    /// <exception cref="TimeoutException">The process did not end in time; it was killed.</exception>
    public static async Task<ConnectStormResult> RunAsync(string peer)
    {
        var start = new ProcessStartInfo("dotnet", [Path.Combine(AppContext.BaseDirectory, "PoolBench.dll"), ConnectStorm.Role, peer])
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        using Process process = Process.Start(start) ?? throw new InvalidOperationException("the connect storm's process did not start");
        process.StandardInput.Close();
        string output;
        using (var timeout = new CancellationTokenSource(s_timeout))
        {
            try
            {
                output = await process.StandardOutput.ReadToEndAsync(timeout.Token).ConfigureAwait(false);
                await process.WaitForExitAsync(timeout.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                process.Kill(entireProcessTree: true);
                throw new TimeoutException($"the connect storm of {peer} did not end within {s_timeout.TotalSeconds:0} s");
            }
        }

        string? line = output.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).LastOrDefault();
        try
        {
            return process.ExitCode == 0 && line is not null && JsonSerializer.Deserialize<ConnectStormResult>(line) is { } result
                ? result
                : throw new InvalidOperationException($"the connect storm of {peer} exited with {process.ExitCode}: '{output.Trim()}'");
        }
        catch (JsonException e)
        {
            throw new InvalidOperationException($"the connect storm of {peer} printed '{line}': {e.Message}", e);
        }
    }
}
