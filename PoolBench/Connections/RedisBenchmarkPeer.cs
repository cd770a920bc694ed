using System.Net;
using PoolBench.Resp;

namespace PoolBench.Connections;

/// <summary>
/// <c>redis-benchmark -t set,get -c N -n R</c>, the C client's limit at the same concurrency: N connections, each with
/// one request in flight. It runs where this process runs, so it shares the clients' CPUs; its figures are its own.
/// </summary>
internal sealed class RedisBenchmarkPeer(string program, IPEndPoint server, int workers) : IConnectionsPeer
{
    public const string PeerName = "redis-benchmark";

    public string Name => PeerName;

    public async Task<IReadOnlyList<TestRound>> RunAsync(int requests)
    {
        RedisBenchmark.Run run = await RedisBenchmark.RunAsync(program, server, workers, requests, pipeline: 1, "set,get", tls: false).ConfigureAwait(false);
        if (run.Failed || run.Errors > 0)
        {
            throw new InvalidOperationException($"redis-benchmark exited with {run.ExitCode} and {run.Errors} line(s) about errors: {run.Output}");
        }

        return [.. RespCommand.Both.Select(command => run.Lines.FirstOrDefault(line => line.Test == command.Test) is RequestFigures figures
            ? new TestRound(figures, requests, null, null, 0)
            : throw new InvalidOperationException($"redis-benchmark printed no {command.Test} line: {run.Output}"))];
    }

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
