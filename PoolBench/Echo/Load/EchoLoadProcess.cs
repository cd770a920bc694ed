using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Text.Json;

namespace PoolBench.Echo.Load;

/// <summary>
/// A share of an echo cell's clients in a child process of its own: PoolBench started again as
/// <c>dotnet PoolBench.dll echo-client</c> (<see cref="EchoLoadChild"/>), with its own thread pool, socket engine
/// and GC, or the C client <c>peers/echo-client.c</c>, which speaks the same protocol (TCP only). Several such
/// processes can load a server that one client process cannot. The child inherits this process's CPU affinity.
/// Every answer has a time limit; disposing closes the child's standard input, which ends it, and kills it if
/// it has not ended soon after.
/// </summary>
internal sealed class EchoLoadProcess : IEchoLoad
{
    /// <summary>Connecting, or the child's own 10 s drain limit, with a margin.</summary>
    private static readonly TimeSpan s_answerTimeout = TimeSpan.FromSeconds(30);

    private readonly Process _process;

    private EchoLoadProcess(Process process) => _process = process;

    public bool InProcess => false;

    /// <summary>Starts a child client; it waits for its first <see cref="StartAsync"/>.</summary>
    /// <param name="cProgram">The C client that <see cref="CPeerBuild"/> built; null for PoolBench's own.</param>
    public static EchoLoadProcess Start(string? cProgram = null)
    {
        ProcessStartInfo start = cProgram is null
            ? new("dotnet", [Path.Combine(AppContext.BaseDirectory, "PoolBench.dll"), EchoLoadChild.Role])
            : new(cProgram);
        start.RedirectStandardInput = true;
        start.RedirectStandardOutput = true;
        start.UseShellExecute = false;
        return new EchoLoadProcess(Process.Start(start) ?? throw new InvalidOperationException($"{start.FileName} did not start"));
    }

    public async Task StartAsync(EchoCell cell, int connections, EndPoint server)
    {
        string command = string.Create(CultureInfo.InvariantCulture, $"start {cell.Protocol} {server} {connections} {cell.Size} {cell.Pipeline}");
        Send(command);
        string answer = await ReadAnswerAsync(command).ConfigureAwait(false);
        if (answer != EchoLoadChild.Started)
        {
            throw new InvalidOperationException($"an echo client process answered '{answer}' to '{command}'");
        }
    }

    public void Measure() => Send("measure");

    public void Drain() => Send("drain");

    public async Task<EchoLoadResult> FinishAsync()
    {
        string answer = await ReadAnswerAsync("drain").ConfigureAwait(false);
        try
        {
            return EchoLoadResult.FromJson(answer);
        }
        catch (JsonException e)
        {
            throw new InvalidOperationException($"an echo client process answered '{answer}' to 'drain': {e.Message}", e);
        }
    }

    public async ValueTask DisposeAsync()
    {
        _process.StandardInput.Close();
        using var timeout = new CancellationTokenSource(s_answerTimeout);
        await _process.WaitForExitAsync(timeout.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        if (!_process.HasExited)
        {
            _process.Kill(entireProcessTree: true);
        }

        _process.Dispose();
    }

    // Synchronous: a short line into a pipe, at the edge of a measured window, where an await would add a thread hop.
    private void Send(string command)
    {
        _process.StandardInput.WriteLine(command);
        _process.StandardInput.Flush();
    }

    private async Task<string> ReadAnswerAsync(string command)
    {
        using var timeout = new CancellationTokenSource(s_answerTimeout);
        try
        {
            return await _process.StandardOutput.ReadLineAsync(timeout.Token).ConfigureAwait(false)
                ?? throw new InvalidOperationException($"an echo client process exited before it answered '{command}'");
        }
        catch (OperationCanceledException)
        {
            throw new TimeoutException($"an echo client process did not answer '{command}' within {s_answerTimeout.TotalSeconds} s");
        }
    }
}
