using SocketServers;

namespace PoolBench.Connections;

/// <summary>
/// A peer whose workers take a pooled connection for each request (<see cref="RespWorker"/>): <see cref="TcpClientPool"/>,
/// or the pool a .NET user writes by hand. The pool is capped at the worker count, as <c>redis-benchmark -c N</c> opens
/// N connections, and outlives the rounds, so that its connections are made in the warm-up.
/// </summary>
internal sealed class PooledPeer<TConnections, TLease>(string name, TConnections connections, IDisposable pool, int workers) : IConnectionsPeer
    where TConnections : IPooledConnections<TLease>
{
    public string Name => name;

    public async Task<IReadOnlyList<TestRound>> RunAsync(int requests)
    {
        var rounds = new List<TestRound>(RespCommand.Both.Count);
        foreach (RespCommand command in RespCommand.Both)
        {
            rounds.Add(await RequestRun.MeasureAsync(
                command.Test, workers, requests, (run, latency) => RespWorker.RunAsync<TConnections, TLease>(connections, command, run, latency)).ConfigureAwait(false));
        }

        return rounds;
    }

    public ValueTask DisposeAsync()
    {
        pool.Dispose();
        return ValueTask.CompletedTask;
    }
}
