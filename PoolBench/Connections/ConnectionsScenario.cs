using System.Net;
using NLog;
using PoolBench.Report;
using PoolBench.Resp;

namespace PoolBench.Connections;

/// <summary>
/// Pooled client connections against Debian's redis-server, which the scenario starts (pinned with
/// <c>--server-cpus</c>): for each worker count, <see cref="TcpClientPool"/> and the pool a .NET user writes by hand,
/// each capped at as many connections as workers, with a minimal RESP client; StackExchange.Redis, which multiplexes;
/// and <c>redis-benchmark -c N</c>, the C client's limit. Each runs SET, then GET, with the same number of requests, in
/// rounds that take turns, after a warm-up. Then the connect storm, for ours and the hand-written pool, each in a
/// process of its own (<see cref="ConnectStorm"/>). Any failed request fails the run.
/// </summary>
internal sealed class ConnectionsScenario(BenchOptions options)
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    private IReadOnlyList<int> Workers => options.Workers ?? [1, 16, 64, 256];

    private int Rounds => options.Rounds ?? (options.Quick ? 1 : 3);

    private int Requests => options.Quick ? 2_000 : 100_000;

    private int WarmUpRequests => options.Quick ? 500 : 20_000;

    public async Task RunAsync(BenchReport report)
    {
        if (InstalledProgram.FindOrSkip("redis-server", "redis-server", "connections: the load against redis-server", report) is string server)
        {
            string? benchmark = InstalledProgram.FindOrSkip("redis-benchmark", "redis-tools", "connections: redis-benchmark", report);
            using RedisServer redis = await RedisServer.StartAsync(server, options.ServerCpus).ConfigureAwait(false);
            var table = new MarkdownTable(
                "workers", "test", "peer", "requests/s", "rounds min–max", "p50 ms", "p99 ms", "errors", "B/req", "pool threads", "vs hand-written", "vs redis-benchmark");
            foreach (int workers in Workers)
            {
                await RunCellAsync(report, table, redis.EndPoint, benchmark, workers).ConfigureAwait(false);
            }

            table.Print($"connections: SET and GET against redis-server, {CellText.Count(Requests)} requests per test, {Rounds} round(s) per worker count, each running every peer in turn; as many connections allowed as workers; requests/s and latencies are the medians of the rounds; B/req and pool threads are this process's allocation per request and its thread pool's most threads (vs = TcpClientPool requests/s over the peer's, above 1 means TcpClientPool is faster){options.QuickLabel}");
        }

        await RunStormsAsync(report).ConfigureAwait(false);
    }

    private async Task RunCellAsync(BenchReport report, MarkdownTable table, IPEndPoint server, string? benchmark, int workers)
    {
        List<IConnectionsPeer> peers = [PooledPeer.Ours(server, workers), PooledPeer.HandWritten(server, workers)];
        try
        {
            peers.Add(await StackExchangeRedisPeer.ConnectAsync(server, workers).ConfigureAwait(false));
            if (benchmark is not null)
            {
                peers.Add(new RedisBenchmarkPeer(benchmark, server, workers));
            }

            if (await MeasureRoundsAsync(report, peers, workers).ConfigureAwait(false) is { } rounds)
            {
                Report(report, table, peers, workers, rounds);
            }
        }
        finally
        {
            foreach (IConnectionsPeer peer in peers)
            {
                await peer.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    /// <summary>
    /// A warm-up run of each peer (its connections, the JIT), then the rounds, each running every peer in turn: for each
    /// peer, its rounds of each test. Null when a peer failed (reported).
    /// </summary>
    private async Task<List<TestRound>[][]?> MeasureRoundsAsync(BenchReport report, List<IConnectionsPeer> peers, int workers)
    {
        var rounds = peers.Select(_ => RespCommand.Both.Select(_ => new List<TestRound>(Rounds)).ToArray()).ToArray();
        for (int round = 0; round <= Rounds; round++)
        {
            for (int i = 0; i < peers.Count; i++)
            {
                s_log.Info("connections: {0}, {1} worker(s), {2}", peers[i].Name, workers, round == 0 ? "warm-up" : $"round {round} of {Rounds}");
                try
                {
                    IReadOnlyList<TestRound> tests = await peers[i].RunAsync(round == 0 ? WarmUpRequests : Requests).ConfigureAwait(false);
                    for (int test = 0; test < tests.Count; test++)
                    {
                        if (round > 0)
                        {
                            rounds[i][test].Add(tests[test]);
                        }
                        else if (tests[test].Errors > 0)
                        {
                            report.Fail($"connections: {peers[i].Name}, {workers} worker(s): {tests[test].Errors} failed request(s) in the warm-up");
                        }
                    }
                }
                catch (Exception e) when (e is InvalidOperationException or TimeoutException)
                {
                    report.Fail($"connections: {peers[i].Name}, {workers} worker(s): {e.Message}");
                    return null;
                }
            }
        }

        return rounds;
    }

    private static void Report(BenchReport report, MarkdownTable table, List<IConnectionsPeer> peers, int workers, List<TestRound>[][] rounds)
    {
        for (int test = 0; test < RespCommand.Both.Count; test++)
        {
            ConnectionsResult[] results = [.. peers.Select((peer, i) => Summarise(peer.Name, workers, rounds[i][test]))];
            double? Rate(string peer) => results.FirstOrDefault(result => result.Peer == peer)?.RequestsPerSec;
            foreach (ConnectionsResult summary in results)
            {
                ConnectionsResult result = summary.Peer == PooledPeer.OursName
                    ? summary with { RatioVsHandWritten = summary.RequestsPerSec / Rate(PooledPeer.HandWrittenName), RatioVsRedisBenchmark = summary.RequestsPerSec / Rate(RedisBenchmarkPeer.PeerName) }
                    : summary;
                report.Add(result);
                if (result.Errors > 0)
                {
                    report.Fail($"connections: {result.Peer} {result.Test}, {workers} worker(s): {result.Errors} failed request(s)");
                }

                table.Row(
                    CellText.Count(workers),
                    result.Test,
                    result.Peer,
                    CellText.Number(result.RequestsPerSec, 0),
                    CellText.Spread(result.RequestsPerSecMin, result.RequestsPerSecMax, v => CellText.Number(v, 0)),
                    CellText.Number(result.P50Ms, 3),
                    CellText.Number(result.P99Ms, 3),
                    CellText.Count(result.Errors),
                    CellText.Optional(result.BytesPerRequest, 2),
                    result.PeakThreads is int threads ? CellText.Count(threads) : "—",
                    CellText.Ratio(result.RatioVsHandWritten),
                    CellText.Ratio(result.RatioVsRedisBenchmark));
            }
        }
    }

    private static ConnectionsResult Summarise(string peer, int workers, List<TestRound> rounds)
    {
        var (rate, min, max, p50, p99) = RequestFigures.Summarise([.. rounds.Select(round => round.Figures)]);
        long requests = rounds.Sum(round => round.Requests);
        double? bytesPerRequest = rounds.All(round => round.AllocatedBytes is not null) ? rounds.Sum(round => round.AllocatedBytes!.Value) / (double)requests : null;
        int? peakThreads = rounds.All(round => round.PeakThreads is not null) ? rounds.Max(round => round.PeakThreads!.Value) : null;
        return new ConnectionsResult(
            peer, rounds[0].Figures.Test, workers, (int)rounds[0].Requests, rounds.Count, rate, min, max, p50, p99,
            rounds.Sum(round => round.Errors), bytesPerRequest, peakThreads, null, null);
    }

    /// <summary>The connect storm of ours and of the hand-written pool, each in a process of its own.</summary>
    private async Task RunStormsAsync(BenchReport report)
    {
        var table = new MarkdownTable(
            "peer", "takers", "cap", "max concurrent creations", "backlog", "served", "failed", "connects", "pool threads at start", "peak", "added", "seconds");
        foreach (string peer in ConnectStorm.Peers)
        {
            s_log.Info("connections: connect storm, {0}", peer);
            ConnectStormResult result;
            try
            {
                result = await ConnectStormProcess.RunAsync(peer).ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or TimeoutException)
            {
                report.Fail($"connections: connect storm, {peer}: {e.Message}");
                continue;
            }

            report.Add(result);
            if (result.Served < result.Takers)
            {
                report.Fail($"connections: connect storm, {peer}: {result.Served} of {result.Takers} takers served, {result.Failed} failed");
            }

            table.Row(
                result.Peer,
                CellText.Count(result.Takers),
                CellText.Count(result.MaxConnections),
                result.MaxConcurrentCreations is int creations ? CellText.Count(creations) : "—",
                CellText.Count(result.Backlog),
                CellText.Count(result.Served),
                CellText.Count(result.Failed),
                CellText.Count(result.Connects),
                CellText.Count(result.ThreadsAtStart),
                CellText.Count(result.ThreadsPeak),
                CellText.Count(result.ThreadsAdded),
                CellText.Seconds(result.Seconds));
        }

        table.Print($"connections: connect storm, {CellText.Count(ConnectStorm.Takers)} takers at once (take, a byte echoed, release) against a listener with a backlog of {ConnectStorm.Backlog} that accepts one connection a millisecond, each pool new and capped at {ConnectStorm.MaxConnections}, in a process of its own; connects = connections the listener accepted; seconds until the last taker was served{options.QuickLabel}");
    }
}
