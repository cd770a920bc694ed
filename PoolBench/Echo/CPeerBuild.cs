using System.ComponentModel;
using System.Diagnostics;
using System.Security.Cryptography;

namespace PoolBench.Echo;

/// <summary>
/// Builds a C peer, such as <c>peers/echo-server.c</c> beside this program, with the machine's <c>gcc</c>, once for
/// each version of the source: the program goes to the temp folder's PoolBench folder under a name that carries
/// the source's hash, and a later run reuses it.
/// </summary>
internal static class CPeerBuild
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(120);

    /// <summary>Builds <c>peers/NAME.c</c>, or finds it built.</summary>
    /// <param name="name">The source's name without <c>.c</c>: <c>echo-server</c> or <c>echo-client</c>.</param>
    /// <returns>The program's path, or null when there is no <c>gcc</c> to build it with.</returns>
    /// <exception cref="InvalidOperationException">gcc failed.</exception>
    /// <exception cref="TimeoutException">gcc did not finish in time.</exception>
    public static async Task<string?> BuildAsync(string name)
    {
        string source = Path.Combine(AppContext.BaseDirectory, "peers", name + ".c");
        string hash = Convert.ToHexStringLower(SHA256.HashData(await File.ReadAllBytesAsync(source).ConfigureAwait(false)))[..16];
        string folder = Path.Combine(Path.GetTempPath(), "PoolBench");
        string program = Path.Combine(folder, $"{name}-c-{hash}");
        if (File.Exists(program))
        {
            return program;
        }

        Directory.CreateDirectory(folder);
        // Built under a name of its own, then renamed, so that a run beside this one never starts half a file.
        string building = $"{program}.{Environment.ProcessId}";
        var start = new ProcessStartInfo("gcc", ["-O2", "-pthread", "-o", building, source])
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        Process gcc;
        try
        {
            gcc = Process.Start(start) ?? throw new InvalidOperationException("gcc did not start");
        }
        catch (Win32Exception)
        {
            return null;
        }

        using (gcc)
        {
            using var timeout = new CancellationTokenSource(s_timeout);
            try
            {
                Task<string> output = gcc.StandardOutput.ReadToEndAsync(timeout.Token);
                string errors = await gcc.StandardError.ReadToEndAsync(timeout.Token).ConfigureAwait(false);
                await output.ConfigureAwait(false);
                await gcc.WaitForExitAsync(timeout.Token).ConfigureAwait(false);
                if (gcc.ExitCode != 0)
                {
                    throw new InvalidOperationException($"gcc could not build {source}: {errors.Trim().Split('\n')[0]}");
                }
            }
            catch (OperationCanceledException)
            {
                gcc.Kill(entireProcessTree: true);
                throw new TimeoutException($"gcc did not build {source} within {s_timeout.TotalSeconds} s");
            }
        }

        File.Move(building, program, overwrite: true);
        return program;
    }
}
