using System.Diagnostics;
using System.Net;
using NLog;
using PoolBench.Echo.Servers;
using PoolBench.Report;

namespace PoolBench.Echo.Soak;

/// <summary>
/// Loads each server in turn, for <c>--seconds</c>, with many <see cref="ChurnClient"/>s that connect, echo, reset,
/// half-close, idle and send UDP bursts without pause, and follows the server process's memory meanwhile: its
/// resident set every second, and for our host the GC's collections and committed memory, read on SIGUSR1 (no
/// collection). The table gives throughput under churn and the resident set before the load, on its plateau (the
/// median of the second half of the samples), at its end and at its highest, and the processor time the server's
/// process used under the load; for our host also the memory the GC
/// had committed at the end and the live heap after a full collection once the load has stopped.
/// </summary>
internal sealed class SoakScenario(BenchOptions options)
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly TimeSpan s_sampleEvery = TimeSpan.FromSeconds(1);

    /// <summary>What the clients may take beyond their last step's own limit to stop.</summary>
    private static readonly TimeSpan s_stopMargin = TimeSpan.FromSeconds(5);

    private TimeSpan Duration => TimeSpan.FromSeconds(options.Seconds ?? (options.Quick ? 3 : 60));

    private int ClientCount => options.Connections is [int count, ..] ? count : options.Quick ? 16 : 256;

    public async Task RunAsync(BenchReport report)
    {
        List<IEchoServer> servers = await EchoServers.StartAsync(options, report, Math.Max(1000, 2 * ClientCount), 8192).ConfigureAwait(false);
        var table = new MarkdownTable(
            "server", "clients", "seconds", "connections", "echoes", "echoes/s", "conns/s", "errors", "lost", "server CPU s",
            "RSS start MiB", "RSS plateau MiB", "RSS end MiB", "RSS max MiB", "committed end MiB", "live heap MiB", "GCs gen0/gen1/gen2");
        try
        {
            foreach (IEchoServer server in servers)
            {
                s_log.Info("soak: {0}, {1} mixed clients for {2} s", server.Name, ClientCount, Duration.TotalSeconds);
                SoakResult result = await SoakAsync(server).ConfigureAwait(false);
                report.Add(result);
                if (result.Errors > 0)
                {
                    report.Fail($"soak: {server.Name}: {result.Errors} error(s)");
                }

                table.Row(
                    server.Name,
                    CellText.Count(result.Clients),
                    CellText.Number(result.Seconds, 1),
                    CellText.Count(result.Connections),
                    CellText.Count(result.Messages),
                    CellText.Number(result.MsgsPerSec, 0),
                    CellText.Number(result.ConnectionsPerSec, 0),
                    CellText.Count(result.Errors),
                    CellText.Count(result.Lost),
                    CellText.Optional(result.ServerCpuSeconds),
                    CellText.Optional(result.RssStartMib),
                    CellText.Optional(result.RssPlateauMib),
                    CellText.Optional(result.RssEndMib),
                    CellText.Optional(result.RssMaxMib),
                    CellText.Optional(result.CommittedEndMib),
                    CellText.Optional(result.LiveHeapMib),
                    result.Gen0Collections is long gen0 ? $"{CellText.Count(gen0)}/{CellText.Count(result.Gen1Collections ?? 0)}/{CellText.Count(result.Gen2Collections ?? 0)}" : "—");
            }
        }
        finally
        {
            foreach (IEchoServer server in servers)
            {
                await server.DisposeAsync().ConfigureAwait(false);
            }
        }

        table.Print($"soak: each server in turn for {Duration.TotalSeconds:0.##} s under {ClientCount} clients that echo, reset, half-close, idle and send UDP bursts without pause (RSS: the server process's resident set, sampled every second; plateau: the median of the second half; committed: the GC's at the end of the load; live heap: after a full collection once the load stopped; server CPU and GCs: during the load){options.QuickLabel}");
    }

    private async Task<SoakResult> SoakAsync(IEchoServer server)
    {
        double? rssStart = server.ProcessMemoryMib;
        double? cpuStart = server.ProcessCpuSeconds;
        HostStats? before = await server.ReadStatsAsync().ConfigureAwait(false);
        // The mix sends UDP bursts too: a TCP-only server (Kestrel) is not one to soak.
        EndPoint udp = server.UdpEndPoint ?? throw new InvalidOperationException($"{server.Name} serves no UDP, which the soak's clients send");
        var clients = Enumerable.Range(0, ClientCount).Select(i => new ChurnClient(server.TcpEndPoint, udp, seed: i)).ToArray();
        (List<double> rss, HostStats? end, TimeSpan elapsed, double? cpuEnd, bool stopped) = await LoadAsync(server, clients, before).ConfigureAwait(false);
        long errors = stopped ? 0 : 1;
        (double HeapMib, double CommittedMib)? live = await server.ReadManagedHeapAsync().ConfigureAwait(false);
        long connections = 0, messages = 0, lost = 0;
        foreach (ChurnClient client in clients)
        {
            connections += client.Connections;
            messages += client.Messages;
            lost += client.Lost;
            errors += client.Errors;
            if (client.FirstError is string error)
            {
                s_log.Error("soak: {0}: {1}", server.Name, error);
            }
        }

        const double Mib = 1 << 20;
        double[] plateau = [.. rss.Skip(rss.Count / 2).Order()];
        return new SoakResult(
            server.Name,
            ClientCount,
            elapsed.TotalSeconds,
            connections,
            messages,
            messages / elapsed.TotalSeconds,
            connections / elapsed.TotalSeconds,
            errors,
            lost,
            cpuEnd - cpuStart,
            rssStart,
            plateau.Length > 0 ? plateau[plateau.Length / 2] : null,
            rss.Count > 0 ? rss[^1] : null,
            rss.Count > 0 ? rss.Max() : null,
            end?.CommittedBytes / Mib,
            live?.HeapMib,
            end?.Gen0Collections - before?.Gen0Collections,
            end?.Gen1Collections - before?.Gen1Collections,
            end?.Gen2Collections - before?.Gen2Collections,
            rss);
    }

    /// <summary>
    /// Runs the clients for <see cref="Duration"/>, sampling the server's resident set and stats every second, then
    /// stops them: the samples, the last stats, the time under load, the server's processor time at its end, and
    /// whether the clients stopped in time.
    /// </summary>
    private async Task<(List<double> Rss, HostStats? End, TimeSpan Elapsed, double? CpuEnd, bool Stopped)> LoadAsync(
        IEchoServer server, ChurnClient[] clients, HostStats? before)
    {
        using var stop = new CancellationTokenSource();
        long start = Stopwatch.GetTimestamp();
        Task all = Task.WhenAll(clients.Select(client => Task.Run(() => client.RunAsync(stop.Token))));

        var rss = new List<double>();
        HostStats? end = before;
        while (Stopwatch.GetElapsedTime(start) < Duration && !all.IsCompleted)
        {
            await Task.WhenAny(all, Task.Delay(s_sampleEvery)).ConfigureAwait(false);
            if (server.ProcessMemoryMib is double sample)
            {
                rss.Add(sample);
            }

            end = await server.ReadStatsAsync().ConfigureAwait(false) ?? end;
        }

        TimeSpan elapsed = Stopwatch.GetElapsedTime(start);
        double? cpuEnd = server.ProcessCpuSeconds;
        stop.Cancel();
        bool stopped = await Task.WhenAny(all, Task.Delay(ChurnClient.StepTimeout + s_stopMargin)).ConfigureAwait(false) == all;
        if (!stopped)
        {
            s_log.Error("soak: {0}: the clients did not stop within {1} s", server.Name, (ChurnClient.StepTimeout + s_stopMargin).TotalSeconds);
        }

        return (rss, end, elapsed, cpuEnd, stopped);
    }
}
