using System.Diagnostics;
using System.Net;
using NLog;
using PoolBench.Echo.Load;
using PoolBench.Echo.Servers;
using PoolBench.Report;

namespace PoolBench.Echo;

/// <summary>
/// Loads echo servers with the same clients, cell by cell: for each protocol, connection count,
/// message size and pipeline depth, several rounds, each of which runs every server in turn. In a
/// round, a server's clients connect, run through a warm-up, are measured for their share of
/// <c>--seconds</c>, then drain the echoes still in flight. A server's messages/s is the median of
/// its rounds, so a few seconds in which the machine runs slower, for whatever reason, fall on
/// every server alike instead of on whichever one happened to run then. Any mismatched echo or
/// broken connection is an error, and an error fails the whole run.
/// </summary>
internal sealed class EchoScenario(BenchOptions options)
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    /// <summary>Measured time per server and cell, all rounds together; also how long idle connections are held.</summary>
    private TimeSpan Measured => TimeSpan.FromSeconds(options.Seconds ?? (options.Quick ? 1 : 5));

    private int Rounds => options.Rounds ?? (options.Quick ? 1 : 5);

    private TimeSpan MeasuredPerRound => Measured / Rounds;

    /// <summary>How long the uncounted first round of a cell loads each server: about what our host and Kestrel take to optimise their hot code under load.</summary>
    private static readonly TimeSpan s_uncountedRound = TimeSpan.FromSeconds(8);

    private TimeSpan WarmUp => TimeSpan.FromSeconds(options.Quick ? 0.25 : 0.5);

    private int Clients => options.Clients ?? 1;

    private string ClientsText =>
        options.Client == "c" ? $"{Clients} C client process{(Clients == 1 ? "" : "es")}"
        : Clients == 1 ? "one client in this process"
        : $"{Clients} client processes";

    private int IdleConnectionCount => options.Idle ?? (options.Quick ? 50 : 1000);

    public async Task RunAsync(BenchReport report)
    {
        string? cClient = null;
        if (options.Client == "c" && (cClient = await CPeerBuild.BuildAsync("echo-client").ConfigureAwait(false)) is null)
        {
            report.Fail("echo: --client c needs gcc on the path to build peers/echo-client.c (apt-get install gcc)");
            return;
        }

        List<IEchoServer> servers = await EchoServers.StartAsync(options, report, MaxConnections(), options.Sizes.Max()).ConfigureAwait(false);
        // One client in this process, as a plain run has it; several, or the C client, in processes of their own, started once.
        List<IEchoLoad> loads = Clients == 1 && cClient is null
            ? [new EchoLoad()]
            : [.. Enumerable.Range(0, Clients).Select(_ => (IEchoLoad)EchoLoadProcess.Start(cClient))];
        try
        {
            foreach (string protocol in options.Protocols)
            {
                // A TCP-only server (Kestrel) sits out the UDP cells.
                await RunProtocolAsync(report, [.. servers.Where(server => protocol == "tcp" || server.UdpEndPoint is not null)], loads, protocol).ConfigureAwait(false);
            }

            if (IdleConnectionCount > 0 && options.Protocols.Contains("tcp"))
            {
                await IdleConnections.RunAllAsync(servers, IdleConnectionCount, options.Sizes[0], Measured, options.QuickLabel, report).ConfigureAwait(false);
            }
        }
        finally
        {
            foreach (IEchoLoad load in loads)
            {
                await load.DisposeAsync().ConfigureAwait(false);
            }

            foreach (IEchoServer server in servers)
            {
                await server.DisposeAsync().ConfigureAwait(false);
            }
        }
    }

    private IReadOnlyList<int> DefaultConnections(string protocol) =>
        options.Quick ? [4] : protocol == "tcp" ? [100] : [8, 100];

    private IReadOnlyList<int> DefaultPipelines(string protocol) =>
        options.Quick ? [1, 4] : protocol == "tcp" ? [1, 100] : [1];

    /// <summary>Our server's connection limit: the most connections any cell or the idle check opens.</summary>
    private int MaxConnections() =>
        Math.Max(IdleConnectionCount, (options.Connections ?? DefaultConnections("tcp")).Max());

    /// <summary>Every cell of one protocol, in one table.</summary>
    private async Task RunProtocolAsync(BenchReport report, List<IEchoServer> servers, IReadOnlyList<IEchoLoad> loads, string protocol)
    {
        var table = new MarkdownTable(
            "conns", "size", "pipeline", "server", "msgs/s", "rounds min–max", "MiB/s", "p50 µs", "p99 µs", "p99.9 µs",
            "errors", "lost", "server B/msg", "client B/msg", "vs ours", "client shares");
        foreach (int connections in options.Connections ?? DefaultConnections(protocol))
        {
            foreach (int size in options.Sizes)
            {
                foreach (int pipeline in options.Pipelines ?? DefaultPipelines(protocol))
                {
                    await RunCellAsync(report, table, servers, loads, new EchoCell(protocol, connections, size, pipeline)).ConfigureAwait(false);
                }
            }
        }

        table.Print($"echo: {protocol.ToUpperInvariant()}, {ClientsText}, {Rounds} round(s) per cell, each measuring every server in turn for {MeasuredPerRound.TotalSeconds:0.##} s after {WarmUp.TotalSeconds:0.##} s warm-up; msgs/s is the median round (vs ours = ours msgs/s / its msgs/s, above 1 means ours is faster; client shares: each client's part of the messages){options.QuickLabel}");
    }

    private async Task RunCellAsync(BenchReport report, MarkdownTable table, List<IEchoServer> servers, IReadOnlyList<IEchoLoad> loads, EchoCell cell)
    {
        if (cell.Problem(loads.Count) is string problem)
        {
            report.Fail($"echo: {problem}");
            return;
        }

        if (await MeasureRoundsAsync(report, servers, loads, cell).ConfigureAwait(false) is not { } rounds)
        {
            return;
        }

        double? oursRate = null;
        for (int i = 0; i < servers.Count; i++)
        {
            IEchoServer server = servers[i];
            EchoResult result = Summarise(server, cell, rounds[i]);
            // The first of our servers in the list is the one the others are compared with.
            oursRate ??= EchoServers.IsOurs(server) && result.Messages > 0 ? result.MsgsPerSec : null;
            result = result with { RatioVsOurs = result.Messages > 0 ? oursRate / result.MsgsPerSec : null };
            report.Add(result);
            if (result.Errors > 0)
            {
                report.Fail($"echo: {server.Name} {cell.Protocol}, {cell.Connections} connection(s), {cell.Size} bytes, pipeline {cell.Pipeline}: {result.Errors} error(s)");
            }

            table.Row(
                CellText.Count(cell.Connections),
                CellText.Count(cell.Size),
                CellText.Count(cell.Pipeline),
                server.Name,
                CellText.Number(result.MsgsPerSec, 0),
                CellText.Spread(result.MsgsPerSecMin, result.MsgsPerSecMax, v => CellText.Number(v, 0)),
                CellText.Number(result.MibPerSec, 2),
                CellText.Optional(result.P50Us),
                CellText.Optional(result.P99Us),
                CellText.Optional(result.P999Us),
                CellText.Count(result.Errors),
                CellText.Count(result.Lost),
                CellText.Optional(result.ServerBytesPerMsg, 2),
                CellText.Optional(result.ClientBytesPerMsg, 2),
                CellText.Ratio(result.RatioVsOurs),
                string.Join(" / ", result.ClientShares.Select(share => CellText.Number(share * 100, 0) + "%")));
        }
    }

    /// <summary>
    /// Every round of the cell, each measuring every server in turn, after a longer round that is not counted (but for
    /// its errors), except in a quick run: a server just started runs code the JIT has not optimised yet for its first
    /// seconds under load. Null when a client process failed.
    /// </summary>
    private async Task<List<Round>[]?> MeasureRoundsAsync(BenchReport report, List<IEchoServer> servers, IReadOnlyList<IEchoLoad> loads, EchoCell cell)
    {
        var rounds = servers.Select(_ => new List<Round>(Rounds)).ToArray();
        for (int round = options.Quick ? 1 : 0; round <= Rounds; round++)
        {
            for (int i = 0; i < servers.Count; i++)
            {
                s_log.Info(
                    "echo: {0} {1}, {2} connection(s), {3} bytes, pipeline {4}, {5}",
                    servers[i].Name, cell.Protocol, cell.Connections, cell.Size, cell.Pipeline, round == 0 ? "uncounted round" : $"round {round} of {Rounds}");
                try
                {
                    Round measured = await MeasureAsync(servers[i], cell, loads, round == 0 ? s_uncountedRound : MeasuredPerRound).ConfigureAwait(false);
                    if (round > 0)
                    {
                        rounds[i].Add(measured);
                    }
                    else if (measured.Errors > 0)
                    {
                        report.Fail($"echo: {servers[i].Name} {cell.Protocol}, {cell.Connections} connection(s), pipeline {cell.Pipeline}: {measured.Errors} error(s) in the uncounted round");
                    }
                }
                catch (Exception e) when (e is InvalidOperationException or TimeoutException or IOException)
                {
                    // A client process that died or stopped answering: the cell cannot be measured.
                    report.Fail($"echo: {servers[i].Name} {cell.Protocol}, {cell.Connections} connection(s): {e.Message}");
                    return null;
                }
            }
        }

        return rounds;
    }

    /// <summary>One round of one server: every client connects its share of the cell, warms up, is measured, drains.</summary>
    private async Task<Round> MeasureAsync(IEchoServer server, EchoCell cell, IReadOnlyList<IEchoLoad> loads, TimeSpan measured)
    {
        EndPoint endPoint = cell.Protocol == "tcp" ? server.TcpEndPoint : server.UdpEndPoint!;
        await Task.WhenAll(loads.Select((load, i) => load.StartAsync(cell, cell.Share(loads.Count, i), endPoint))).ConfigureAwait(false);
        await Task.Delay(WarmUp).ConfigureAwait(false);

        // A server in its own process reads its allocations at both ends of the measured window, the second
        // while the clients still send: draining ends with every connection closing, which is no echo.
        long? serverBefore = (await server.ReadStatsAsync().ConfigureAwait(false))?.AllocatedBytes;
        long allocated = GC.GetTotalAllocatedBytes(true);
        long start = Stopwatch.GetTimestamp();
        foreach (IEchoLoad load in loads)
        {
            load.Measure();
        }

        await Task.Delay(measured).ConfigureAwait(false);
        allocated = GC.GetTotalAllocatedBytes(true) - allocated;
        long? serverAllocated = (await server.ReadStatsAsync().ConfigureAwait(false))?.AllocatedBytes - serverBefore;
        foreach (IEchoLoad load in loads)
        {
            load.Drain();
        }

        TimeSpan elapsed = Stopwatch.GetElapsedTime(start);
        EchoLoadResult[] results = await Task.WhenAll(loads.Select(load => load.FinishAsync())).ConfigureAwait(false);
        return Round.Of(server, cell, loads, results, elapsed, allocated, serverAllocated);
    }

    /// <summary>
    /// Reduces a server's rounds to its result: the median round's messages/s, and everything else
    /// over all rounds together. Allocation per message: for a server in this process, what the
    /// whole process allocated in the measured windows minus what the clients in it counted for
    /// themselves; for a server elsewhere, the whole process is the client's, and the server's own
    /// process counts the server's where it tells (our host), in every round. Client processes
    /// count their whole process as the client's.
    /// </summary>
    private static EchoResult Summarise(IEchoServer server, EchoCell cell, List<Round> rounds)
    {
        var latency = new LatencyHistogram();
        long messages = 0, errors = 0, lost = 0, allocated = 0, clientAllocated = 0, childAllocated = 0;
        long? serverAllocated = 0;
        var clientMessages = new long[rounds[0].ClientMessages.Count];
        TimeSpan elapsed = TimeSpan.Zero;
        foreach (Round round in rounds)
        {
            latency.Add(round.Latency);
            messages += round.Messages;
            errors += round.Errors;
            lost += round.Lost;
            allocated += round.AllocatedBytes;
            clientAllocated += round.ClientAllocatedBytes;
            childAllocated += round.ChildAllocatedBytes;
            serverAllocated += round.ServerAllocatedBytes;
            elapsed += round.Elapsed;
            for (int i = 0; i < clientMessages.Length; i++)
            {
                clientMessages[i] += round.ClientMessages[i];
            }
        }

        double[] rates = rounds.Select(round => round.MsgsPerSec).Order().ToArray();
        double rate = Median.Of(rates);
        double? perMessage(long bytes) => messages > 0 ? (double)bytes / messages : null;
        return new EchoResult(
            server.Name, cell.Protocol, cell.Connections, cell.Size, cell.Pipeline, elapsed.TotalSeconds, messages,
            rate, rates[0], rates[^1], rounds.Count, rate * cell.Size / (1 << 20),
            latency.PercentileMicroseconds(50), latency.PercentileMicroseconds(99), latency.PercentileMicroseconds(99.9),
            errors, lost,
            server.InProcess ? perMessage(allocated - clientAllocated) : serverAllocated is long bytes ? perMessage(bytes) : null,
            server.InProcess ? perMessage(clientAllocated + childAllocated) : perMessage(allocated + childAllocated),
            null,
            clientMessages.Length,
            [.. clientMessages.Select(count => messages > 0 ? (double)count / messages : 0)]);
    }

    /// <summary>
    /// What one server did in one round of a cell, before the rounds are reduced to an <see cref="EchoResult"/>.
    /// <see cref="AllocatedBytes"/> is this process's allocation over the measured window; <see cref="ClientAllocatedBytes"/>
    /// is the part the clients in it counted themselves; <see cref="ChildAllocatedBytes"/> what client processes allocated
    /// over theirs; <see cref="ServerAllocatedBytes"/> what a server in its own process allocated over the same window,
    /// where it tells. <see cref="ClientMessages"/> holds each client's messages.
    /// </summary>
    private sealed record Round(
        TimeSpan Elapsed,
        long Messages,
        long Errors,
        long Lost,
        long AllocatedBytes,
        long ClientAllocatedBytes,
        long ChildAllocatedBytes,
        long? ServerAllocatedBytes,
        LatencyHistogram Latency,
        IReadOnlyList<long> ClientMessages)
    {
        public double MsgsPerSec => Messages / Math.Max(Elapsed.TotalSeconds, 1e-9);

        /// <summary>The round from what every client saw; a round in which nothing was echoed counts one error.</summary>
        public static Round Of(
            IEchoServer server, EchoCell cell, IReadOnlyList<IEchoLoad> loads, EchoLoadResult[] results, TimeSpan elapsed, long allocated, long? serverAllocated)
        {
            var latency = new LatencyHistogram();
            long messages = 0, errors = 0, lost = 0, clientAllocated = 0, childAllocated = 0;
            for (int i = 0; i < results.Length; i++)
            {
                EchoLoadResult result = results[i];
                latency.Add(result.Latency);
                messages += result.Messages;
                errors += result.Errors;
                lost += result.Lost;
                // Clients in this process are in its own count; a child's whole process is the client's.
                clientAllocated += loads[i].InProcess ? result.ClientAllocatedBytes : 0;
                childAllocated += loads[i].InProcess ? 0 : result.ProcessAllocatedBytes;
                if (result.FirstError is string error)
                {
                    s_log.Error("echo: {0} {1}, client {2}: {3}", server.Name, cell.Protocol, i + 1, error);
                }
            }

            if (messages == 0)
            {
                errors++;
                s_log.Error("echo: {0} {1} echoed nothing in the measured window", server.Name, cell.Protocol);
            }

            return new Round(
                elapsed, messages, errors, lost, allocated, clientAllocated, childAllocated, serverAllocated, latency,
                results.Select(result => result.Messages).ToArray());
        }
    }
}
