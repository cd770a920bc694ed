using System.Diagnostics;
using System.Net.Sockets;
using System.Text.Json;
using NLog;
using PoolLib;
using SocketServers;

namespace PoolBench.Connections;

/// <summary>
/// PoolBench as a connect storm's process (<c>PoolBench connect-storm PEER</c>, started by
/// <see cref="ConnectStormProcess"/>), so that the thread pool it counts has only the storm's threads: 1,000 takers,
/// each started with <see cref="Task.Run(Func{Task})"/> at once, take a connection from a new, empty pool capped at 50,
/// send a byte, read its echo and release the connection, against a <see cref="SlowListener"/> with a backlog of 8. A
/// storm of 20 takers and a cap of 2, against a listener of its own, runs first and is not measured: the measured one
/// then runs compiled code, with the thread pool at its minimum threads. The result goes to standard output as one JSON
/// line.
/// </summary>
internal static class ConnectStorm
{
    /// <summary>The first argument that starts PoolBench as a connect storm's process.</summary>
    public const string Role = "connect-storm";

    public const int Takers = 1000;
    public const int MaxConnections = 50;
    public const int Backlog = 8;

    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly TimeSpan s_limit = TimeSpan.FromSeconds(60);
    private static readonly TimeSpan s_quiet = TimeSpan.FromMilliseconds(200);
    private static readonly ReadOnlyMemory<byte> s_ping = "p"u8.ToArray();

    /// <summary>The pools a storm can be run on: ours and the hand-written one.</summary>
    public static IReadOnlyList<string> Peers { get; } = [PooledPeer.OursName, PooledPeer.HandWrittenName];

    /// <returns>0 when the storm ran (whether or not every taker was served), 2 for a peer it does not know.</returns>
    public static async Task<int> RunAsync(string peer, TextWriter output)
    {
        if (!Peers.Contains(peer))
        {
            await Console.Error.WriteLineAsync($"PoolBench {Role}: unknown peer '{peer}'").ConfigureAwait(false);
            return 2;
        }

        await StormAsync(peer, 20, 2).ConfigureAwait(false);
        ConnectStormResult result = await StormAsync(peer, Takers, MaxConnections).ConfigureAwait(false);
        await output.WriteLineAsync(JsonSerializer.Serialize(result)).ConfigureAwait(false);
        await output.FlushAsync().ConfigureAwait(false);
        return 0;
    }

    private static async Task<ConnectStormResult> StormAsync(string peer, int takers, int maxConnections)
    {
        using var listener = new SlowListener(Backlog);
        if (peer == PooledPeer.OursName)
        {
            var options = new PoolOptions { MaxCapacity = maxConnections };
            using var pool = new TcpClientPool(listener.EndPoint, options);
            return await StormAsync<TcpClientPoolConnections, PoolSlot<TcpClientConnection>>(
                peer, new TcpClientPoolConnections(pool), listener, takers, maxConnections, options.MaxConcurrentCreations).ConfigureAwait(false);
        }

        using var handWritten = new HandWrittenSocketPool(listener.EndPoint, maxConnections);
        return await StormAsync<HandWrittenSocketPool, Socket>(peer, handWritten, listener, takers, maxConnections, null).ConfigureAwait(false);
    }

    private static async Task<ConnectStormResult> StormAsync<TConnections, TLease>(
        string peer, TConnections connections, SlowListener listener, int takers, int maxConnections, int? maxConcurrentCreations)
        where TConnections : IPooledConnections<TLease>
    {
        var tasks = new Task[takers];
        int threadsAtStart = ThreadPool.ThreadCount;
        using var threads = ThreadPoolPeak.Start();
        long started = Stopwatch.GetTimestamp();
        for (int i = 0; i < takers; i++)
        {
            tasks[i] = Task.Run(() => TakeOnceAsync<TConnections, TLease>(connections));
        }

        await Task.WhenAll(tasks).WaitAsync(s_limit).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        double seconds = Stopwatch.GetElapsedTime(started).TotalSeconds;
        int threadsPeak = threads.Stop();
        await listener.WaitQuietAsync(s_quiet).ConfigureAwait(false);

        int served = tasks.Count(task => task.IsCompletedSuccessfully);
        int failed = tasks.Count(task => task.IsFaulted || task.IsCanceled);
        if (tasks.FirstOrDefault(task => task.IsFaulted)?.Exception?.InnerException is Exception failure)
        {
            s_log.Warn("connect storm, {0}: {1} taker(s) failed, the first with {2}", peer, failed, failure.Message);
        }

        return new ConnectStormResult(
            peer, takers, maxConnections, maxConcurrentCreations, Backlog, served, failed, listener.Accepted, threadsAtStart, threadsPeak, seconds);
    }

    /// <summary>Takes a connection, sends a byte, reads its echo and releases the connection; discards it if the exchange failed.</summary>
    private static async Task TakeOnceAsync<TConnections, TLease>(TConnections connections)
        where TConnections : IPooledConnections<TLease>
    {
        TLease lease = await connections.TakeAsync(CancellationToken.None).ConfigureAwait(false);
        try
        {
            await connections.SendAsync(lease, s_ping, CancellationToken.None).ConfigureAwait(false);
            if (await connections.ReceiveAsync(lease, new byte[1], CancellationToken.None).ConfigureAwait(false) != 1)
            {
                throw new IOException("the listener closed the connection");
            }
        }
        catch
        {
            connections.Discard(lease);
            throw;
        }

        connections.Release(lease);
    }
}
