using System.Diagnostics;
using System.Globalization;
using System.Net;

namespace PoolBench.Echo;

/// <summary>
/// The idle TCP clients of <c>peers/idle-clients.js</c> in a Node.js child process, so that the
/// connections' client ends live outside this process: a server in this process is then alone in
/// its managed heap, and each connection costs this process one descriptor instead of two. The
/// child takes commands on its standard input (<c>connect</c>, then <c>echo</c>) and answers each
/// with one line on its standard output; its standard error is this process's. Every wait here has
/// a time limit, and the child bounds its own run too and exits when its standard input closes, so
/// it never outlives the benchmark. Disposing kills it if it is still running.
/// </summary>
internal sealed class IdleClientProcess : IAsyncDisposable
{
    /// <summary>How long the child may take to connect everything, and to echo on everything.</summary>
    private static readonly TimeSpan s_step = TimeSpan.FromSeconds(30);

    /// <summary>What this process allows beyond <see cref="s_step"/> before it gives up on an answer.</summary>
    private static readonly TimeSpan s_margin = TimeSpan.FromSeconds(10);

    private readonly Process _process;

    private IdleClientProcess(Process process) => _process = process;

    /// <summary>Starts the child; it waits for <see cref="ConnectAsync"/> before it opens anything.</summary>
    /// <param name="hold">How long the connections will be held, which the child's own time bound must cover.</param>
    public static IdleClientProcess Start(IPEndPoint server, int count, int size, TimeSpan hold)
    {
        TimeSpan total = hold + s_step + s_step + s_margin;
        var start = new ProcessStartInfo(
            "node",
            [
                Path.Combine(AppContext.BaseDirectory, "peers", "idle-clients.js"),
                server.Address.ToString(),
                server.Port.ToString(CultureInfo.InvariantCulture),
                count.ToString(CultureInfo.InvariantCulture),
                size.ToString(CultureInfo.InvariantCulture),
                s_step.TotalSeconds.ToString(CultureInfo.InvariantCulture),
                Math.Ceiling(total.TotalSeconds).ToString(CultureInfo.InvariantCulture),
            ])
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        return new IdleClientProcess(Process.Start(start) ?? throw new InvalidOperationException("node did not start"));
    }

    /// <summary>Opens every connection; returns how many connected once each has connected or failed.</summary>
    public async Task<int> ConnectAsync()
    {
        string[] answer = await CommandAsync("connect").ConfigureAwait(false);
        return answer is ["connected", string connected, "failed", _]
            ? int.Parse(connected, CultureInfo.InvariantCulture)
            : throw Unexpected(answer);
    }

    /// <summary>Sends one message on every open connection and returns once each echo has been checked.</summary>
    public async Task<Counts> EchoAsync()
    {
        string[] answer = await CommandAsync("echo").ConfigureAwait(false);
        return answer is ["result", "connected", string connected, "echoed", string echoed, "errors", string errors]
            ? new Counts(
                int.Parse(connected, CultureInfo.InvariantCulture),
                int.Parse(echoed, CultureInfo.InvariantCulture),
                long.Parse(errors, CultureInfo.InvariantCulture))
            : throw Unexpected(answer);
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
        }

        using var timeout = new CancellationTokenSource(s_margin);
        await _process.WaitForExitAsync(timeout.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        _process.Dispose();
    }

    /// <summary>Writes one command line and reads the one line that answers it, within the step's limit.</summary>
    private async Task<string[]> CommandAsync(string command)
    {
        await _process.StandardInput.WriteLineAsync(command).ConfigureAwait(false);
        await _process.StandardInput.FlushAsync().ConfigureAwait(false);
        using var timeout = new CancellationTokenSource(s_step + s_margin);
        try
        {
            string line = await _process.StandardOutput.ReadLineAsync(timeout.Token).ConfigureAwait(false)
                ?? throw new InvalidOperationException($"the idle clients exited before they answered '{command}'");
            return line.Split(' ');
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"the idle clients did not answer '{command}' within {(s_step + s_margin).TotalSeconds} s");
        }
    }

    private static InvalidOperationException Unexpected(string[] answer) =>
        new($"the idle clients answered '{string.Join(' ', answer)}'");

    /// <summary>What the idle clients report at the end: connections opened, echoed in full, and failed in any way.</summary>
    public readonly record struct Counts(int Connected, int Echoed, long Errors);
}
