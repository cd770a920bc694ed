using System.Net;
using NLog;
using PoolBench.Echo.Servers;
using PoolBench.Report;

namespace PoolBench.Resp;

/// <summary>
/// Runs <c>redis-benchmark -t ping,set,get,incr</c>, with the same settings, against our RESP sample (the console host's
/// <c>resp</c>, in its own process) and Debian's <c>redis-server</c> in turn, several rounds per pipeline depth, and
/// reports each test's requests/s and latency percentiles with the ratio. Servers are pinned with
/// <c>--server-cpus</c>; redis-benchmark runs where PoolBench runs (pin it with taskset). Any error reply fails the run.
/// </summary>
internal sealed class RespScenario(BenchOptions options)
{
    private const string Tests = "ping,set,get,incr";
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    private int Rounds => options.Rounds ?? (options.Quick ? 1 : 3);

    private int Clients => options.Connections?[0] ?? 50;

    private IReadOnlyList<int> Pipelines => options.Pipelines ?? (options.Quick ? [1] : [1, 16]);

    private int Requests(int pipeline) => options.Quick ? 2_000 : pipeline == 1 ? 200_000 : 1_000_000;

    private int WarmUpRequests => options.Quick ? 500 : 20_000;

    public async Task RunAsync(BenchReport report)
    {
        if (InstalledProgram.Find("redis-benchmark") is not string benchmark)
        {
            report.Fail("resp: redis-benchmark is not installed (apt-get install redis-tools)");
            return;
        }

        var servers = new List<(string Name, IPEndPoint EndPoint, ChildEchoServer? Ours)>();
        using TlsFiles? tls = options.Tls ? TlsFiles.Create() : null;
        string[] tlsArguments = tls is null ? [] : ["--tls-cert", tls.CertificatePath, "--tls-key", tls.KeyPath];
        ChildEchoServer ours = await ChildEchoServer.StartOursRespAsync(Clients + 16, options.ServerCpus, tlsArguments).ConfigureAwait(false);
        await using (ours.ConfigureAwait(false))
        {
            servers.Add(("ours-resp", (IPEndPoint)ours.TcpEndPoint, ours));
            string? program = InstalledProgram.FindOrSkip("redis-server", "redis-server", "resp: redis-server", report);
            using RedisServer? redis = program is null ? null : await RedisServer.StartAsync(program, options.ServerCpus, tls).ConfigureAwait(false);
            if (redis is not null)
            {
                servers.Add(("redis-server", redis.EndPoint, null));
            }

            // Each server's code warms up (tiered compilation, the pools) before anything is measured.
            foreach (var (name, endPoint, _) in servers)
            {
                foreach (int pipeline in Pipelines)
                {
                    if (await RunBenchmarkAsync(report, benchmark, endPoint, null, pipeline, WarmUpRequests).ConfigureAwait(false) is null)
                    {
                        return;
                    }
                }
            }

            var table = new MarkdownTable("clients", "pipeline", "test", "server", "requests/s", "rounds min–max", "p50 ms", "p99 ms", "errors", "server B/req", "vs redis-server");
            foreach (int pipeline in Pipelines)
            {
                await RunCellAsync(report, table, benchmark, servers, pipeline).ConfigureAwait(false);
            }

            string over = options.Tls ? " --tls (TLS on every server, one self-signed certificate)" : "";
            table.Print($"resp: redis-benchmark{over} -c {Clients} -t {Tests}, {Rounds} round(s) per pipeline depth, each running every server in turn; requests/s and latencies are the medians of the rounds (vs redis-server = ours requests/s / redis-server's, above 1 means ours is faster; geomean = the geometric mean of the tests' figures){options.QuickLabel}");
        }
    }

    private async Task RunCellAsync(BenchReport report, MarkdownTable table, string benchmark, List<(string Name, IPEndPoint EndPoint, ChildEchoServer? Ours)> servers, int pipeline)
    {
        var runs = servers.Select(_ => new List<Run>()).ToArray();
        for (int round = 1; round <= Rounds; round++)
        {
            for (int i = 0; i < servers.Count; i++)
            {
                s_log.Info("resp: {0}, pipeline {1}, round {2} of {3}", servers[i].Name, pipeline, round, Rounds);
                Run? run = await RunBenchmarkAsync(report, benchmark, servers[i].EndPoint, servers[i].Ours, pipeline, Requests(pipeline)).ConfigureAwait(false);
                if (run is null)
                {
                    return;
                }

                runs[i].Add(run);
            }
        }

        var results = new List<RespResult>();
        for (int i = 0; i < servers.Count; i++)
        {
            double? bytesPerRequest = runs[i].All(run => run.ServerAllocated is not null)
                ? runs[i].Sum(run => run.ServerAllocated!.Value) / (double)runs[i].Sum(run => run.Lines.Count * (long)Requests(pipeline))
                : null;
            foreach (string test in runs[i][0].Lines.Select(line => line.Test))
            {
                RequestFigures[] lines = [.. runs[i].Select(run => run.Lines.First(line => line.Test == test))];
                var (rate, min, max, p50, p99) = RequestFigures.Summarise(lines);
                results.Add(new RespResult(
                    servers[i].Name, test, Clients, pipeline, Requests(pipeline), rate, min, max, lines.Length, p50, p99,
                    runs[i].Sum(run => run.Errors), bytesPerRequest, null));
            }
        }

        foreach (RespResult result in results)
        {
            double? redisRate = results.FirstOrDefault(other => other.Server == "redis-server" && other.Test == result.Test)?.RequestsPerSec;
            RespResult reported = result.Server == "ours-resp" && redisRate is double rate ? result with { RatioVsRedis = result.RequestsPerSec / rate } : result;
            report.Add(reported);
            if (reported.Errors > 0)
            {
                report.Fail($"resp: {reported.Server} {reported.Test}, pipeline {pipeline}: {reported.Errors} error(s)");
            }

            table.Row(
                CellText.Count(Clients),
                CellText.Count(pipeline),
                reported.Test,
                reported.Server,
                CellText.Number(reported.RequestsPerSec, 0),
                CellText.Spread(reported.RequestsPerSecMin, reported.RequestsPerSecMax, v => CellText.Number(v, 0)),
                CellText.Number(reported.P50Ms, 3),
                CellText.Number(reported.P99Ms, 3),
                CellText.Count(reported.Errors),
                CellText.Optional(reported.ServerBytesPerRequest, 2),
                CellText.Ratio(reported.RatioVsRedis));
        }

        AddGeometricMeans(table, results, pipeline);
    }

    /// <summary>A row per server with the geometric mean of its tests' requests/s, and ours against redis-server's.</summary>
    private void AddGeometricMeans(MarkdownTable table, List<RespResult> results, int pipeline)
    {
        double? redis = GeometricMean(results.Where(result => result.Server == "redis-server"));
        foreach (string server in results.Select(result => result.Server).Distinct())
        {
            double? mean = GeometricMean(results.Where(result => result.Server == server));
            double? ratio = server == "ours-resp" && redis is > 0 && mean is double ours ? ours / redis : null;
            table.Row(CellText.Count(Clients), CellText.Count(pipeline), "geomean", server, CellText.Optional(mean, 0), "", "", "", "", "", CellText.Ratio(ratio));
        }
    }

    private static double? GeometricMean(IEnumerable<RespResult> results)
    {
        double[] rates = [.. results.Select(result => result.RequestsPerSec)];
        return rates.Length == 0 || rates.Any(rate => rate <= 0) ? null : Math.Exp(rates.Average(Math.Log));
    }

    /// <summary>One redis-benchmark run of every test against <paramref name="endPoint"/>; null when it failed (reported).</summary>
    private async Task<Run?> RunBenchmarkAsync(BenchReport report, string benchmark, IPEndPoint endPoint, ChildEchoServer? ours, int pipeline, int requests)
    {
        long? before = ours is null ? null : (await ours.ReadStatsAsync().ConfigureAwait(false))?.AllocatedBytes;
        RedisBenchmark.Run run = await RedisBenchmark.RunAsync(benchmark, endPoint, Clients, requests, pipeline, Tests, options.Tls).ConfigureAwait(false);
        long? after = ours is null ? null : (await ours.ReadStatsAsync().ConfigureAwait(false))?.AllocatedBytes;
        if (run.Failed)
        {
            report.Fail($"resp: redis-benchmark against {endPoint} exited with {run.ExitCode}: {run.Output}");
            return null;
        }

        return new Run(run.Lines, run.Errors, after - before);
    }

    /// <summary>One redis-benchmark run: a line per test, the error replies it printed, what our server allocated.</summary>
    private sealed record Run(IReadOnlyList<RequestFigures> Lines, long Errors, long? ServerAllocated);
}
