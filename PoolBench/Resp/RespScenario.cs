using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
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
        if (Which("redis-benchmark") is not string benchmark)
        {
            report.Fail("resp: redis-benchmark is not installed (apt-get install redis-tools)");
            return;
        }

        var servers = new List<(string Name, IPEndPoint EndPoint, ChildEchoServer? Ours)>();
        ChildEchoServer ours = await ChildEchoServer.StartOursRespAsync(Clients + 16, options.ServerCpus).ConfigureAwait(false);
        await using (ours.ConfigureAwait(false))
        {
            servers.Add(("ours-resp", (IPEndPoint)ours.TcpEndPoint, ours));
            using RedisServer? redis = Which("redis-server") is string program ? await RedisServer.StartAsync(program, options.ServerCpus).ConfigureAwait(false) : null;
            if (redis is null)
            {
                s_log.Warn("resp: redis-server is skipped: it is not installed (apt-get install redis-server)");
            }
            else
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

            table.Print($"resp: redis-benchmark -c {Clients} -t {Tests}, {Rounds} round(s) per pipeline depth, each running every server in turn; requests/s and latencies are the medians of the rounds (vs redis-server = ours requests/s / redis-server's, above 1 means ours is faster){options.QuickLabel}");
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
                Line[] lines = [.. runs[i].Select(run => run.Lines.First(line => line.Test == test))];
                results.Add(new RespResult(
                    servers[i].Name, test, Clients, pipeline, Requests(pipeline),
                    Median(lines.Select(line => line.RequestsPerSec)), lines.Min(line => line.RequestsPerSec), lines.Max(line => line.RequestsPerSec), lines.Length,
                    Median(lines.Select(line => line.P50Ms)), Median(lines.Select(line => line.P99Ms)),
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
    }

    /// <summary>One redis-benchmark run of every test against <paramref name="endPoint"/>; null when it failed (reported).</summary>
    private async Task<Run?> RunBenchmarkAsync(BenchReport report, string benchmark, IPEndPoint endPoint, ChildEchoServer? ours, int pipeline, int requests)
    {
        var start = new ProcessStartInfo(benchmark)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
        };
        foreach (string argument in (string[])["-h", endPoint.Address.ToString(), "-p", Text(endPoint.Port), "-c", Text(Clients), "-n", Text(requests),
                     "-P", Text(pipeline), "-t", Tests, "--csv"])
        {
            start.ArgumentList.Add(argument);
        }

        long? before = ours is null ? null : (await ours.ReadStatsAsync().ConfigureAwait(false))?.AllocatedBytes;
        using Process process = Process.Start(start) ?? throw new InvalidOperationException("redis-benchmark did not start");
        process.StandardInput.Close();
        Task<string> output = process.StandardOutput.ReadToEndAsync();
        string errors = await process.StandardError.ReadToEndAsync().ConfigureAwait(false);
        await process.WaitForExitAsync().ConfigureAwait(false);
        long? after = ours is null ? null : (await ours.ReadStatsAsync().ConfigureAwait(false))?.AllocatedBytes;
        string text = await output.ConfigureAwait(false);

        List<Line> lines = [.. text.Split('\n').Select(Line.Parse).OfType<Line>()];
        if (process.ExitCode != 0 || lines.Count == 0)
        {
            report.Fail($"resp: redis-benchmark against {endPoint} exited with {process.ExitCode}: {errors.Trim()} {text.Trim()}");
            return null;
        }

        long errorLines = (text + errors).Split('\n').LongCount(line => line.Contains("rror", StringComparison.Ordinal));
        return new Run(lines, errorLines, after - before);
    }

    private static string Text(int value) => value.ToString(CultureInfo.InvariantCulture);

    private static double Median(IEnumerable<double> values)
    {
        double[] sorted = [.. values.Order()];
        return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }

    private static string? Which(string name)
        => (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(Path.PathSeparator)
            .Select(directory => Path.Combine(directory, name))
            .FirstOrDefault(File.Exists);

    /// <summary>One redis-benchmark run: a line per test, the error replies it printed, what our server allocated.</summary>
    private sealed record Run(List<Line> Lines, long Errors, long? ServerAllocated);

    /// <summary>One CSV line of redis-benchmark 7: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
    /// "p95_latency_ms","p99_latency_ms","max_latency_ms".</summary>
    private sealed record Line(string Test, double RequestsPerSec, double P50Ms, double P99Ms)
    {
        public static Line? Parse(string text)
        {
            string[] fields = text.Trim().Split(',').Select(field => field.Trim('"')).ToArray();
            return fields.Length >= 7 && double.TryParse(fields[1], NumberStyles.Float, CultureInfo.InvariantCulture, out double rps)
                ? new Line(fields[0], rps, double.Parse(fields[4], CultureInfo.InvariantCulture), double.Parse(fields[6], CultureInfo.InvariantCulture))
                : null;
        }
    }

    /// <summary>Debian's redis-server on a free port of 127.0.0.1, with no persistence; disposing stops it.</summary>
    private sealed class RedisServer : IDisposable
    {
        private readonly Process _process;

        private RedisServer(Process process, IPEndPoint endPoint)
        {
            _process = process;
            EndPoint = endPoint;
        }

        public IPEndPoint EndPoint { get; }

        public static async Task<RedisServer> StartAsync(string program, string? cpus)
        {
            int port;
            using (var probe = new TcpListener(IPAddress.Loopback, 0))
            {
                probe.Start();
                port = ((IPEndPoint)probe.LocalEndpoint).Port;
            }

            string[] arguments = ["--port", Text(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no"];
            var start = cpus is null ? new ProcessStartInfo(program, arguments) : new ProcessStartInfo("taskset", ["-c", cpus, program, .. arguments]);
            start.RedirectStandardOutput = true;
            start.RedirectStandardInput = true;
            Process process = Process.Start(start) ?? throw new InvalidOperationException("redis-server did not start");
            _ = process.StandardOutput.ReadToEndAsync();
            var endPoint = new IPEndPoint(IPAddress.Loopback, port);
            for (int attempt = 0; ; attempt++)
            {
                try
                {
                    using var client = new TcpClient();
                    await client.ConnectAsync(endPoint).ConfigureAwait(false);
                    s_log.Info("redis-server (pid {0}) listens on {1}", process.Id, endPoint);
                    return new RedisServer(process, endPoint);
                }
                catch (SocketException) when (attempt < 100 && !process.HasExited)
                {
                    await Task.Delay(50).ConfigureAwait(false);
                }
            }
        }

        public void Dispose()
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
                _process.WaitForExit(5000);
            }

            _process.Dispose();
        }
    }
}
