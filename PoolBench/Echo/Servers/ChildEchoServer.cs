using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Runtime.InteropServices;
using NLog;

namespace PoolBench.Echo.Servers;

/// <summary>
/// An echo server run as a child process on free ports of 127.0.0.1: the Node.js peer of
/// <c>peers/echo-server.js</c>, the C peer, the Kestrel peer (KestrelPeer/, TCP only), or our servers'
/// console host (also as the RESP sample, TCP only). They print <c>tcp echo listening on ADDRESS:PORT</c> (the RESP
/// sample <c>resp listening on</c>) and the same for <c>udp</c>; the server is ready when the lines it prints have come. Its output is read until it exits, so a chatty log never blocks it;
/// disposing kills it. Our host prints its stats on SIGUSR1, and after a full collection on SIGUSR2: among
/// them the bytes it has allocated (<c>stats: process.allocated_bytes N by_stats M</c>) and, last, its managed
/// heap (<c>stats: process.managed_heap_bytes N committed M</c>). <see cref="ReadStatsAsync"/> and
/// <see cref="ReadManagedHeapAsync"/> send the signal and read the answer from that output.
/// </summary>
internal sealed class ChildEchoServer : IEchoServer
{
    // Linux's numbers; our host prints its stats on either, collecting first on SIGUSR2.
    private const int SigUsr1 = 10;
    private const int SigUsr2 = 12;
    private const string TcpReady = "tcp echo listening on ";
    private const string RespReady = "resp listening on ";
    private const string UdpReady = "udp echo listening on ";
    private const string CollectionStats = "stats: process.gc.collections ";
    private const string AllocatedStats = "stats: process.allocated_bytes ";
    private const string HeapStats = "stats: process.managed_heap_bytes ";
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly TimeSpan s_startTimeout = TimeSpan.FromSeconds(30);

    private static readonly TimeSpan s_statsTimeout = TimeSpan.FromSeconds(30);

    private readonly Process _process;
    private readonly bool _printsStats;
    private readonly Task _draining;

    // The next printout the output reader sees completes it; replaced for each request.
    private TaskCompletionSource<HostStats> _printout = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private ChildEchoServer(string name, Process process, EndPoint tcp, EndPoint? udp, bool printsStats)
    {
        Name = name;
        _process = process;
        _printsStats = printsStats;
        TcpEndPoint = tcp;
        UdpEndPoint = udp;
        _draining = DrainAsync();
    }

    public string Name { get; }

    public EndPoint TcpEndPoint { get; }

    public EndPoint? UdpEndPoint { get; }

    public bool InProcess => false;

    public long? AcceptedTcpConnections => null;

    /// <summary>The child's resident set (VmRSS) from <c>/proc</c> on Linux; an upper bound of its managed heap.</summary>
    public double? ProcessMemoryMib
    {
        get
        {
            string status = $"/proc/{_process.Id}/status";
            string? line = File.Exists(status) ? File.ReadLines(status).FirstOrDefault(l => l.StartsWith("VmRSS:", StringComparison.Ordinal)) : null;
            string[]? parts = line?.Split(' ', StringSplitOptions.RemoveEmptyEntries);
            return parts is [_, string kib, "kB"] ? long.Parse(kib, CultureInfo.InvariantCulture) / 1024.0 : null;
        }
    }

    public double? ProcessCpuSeconds
    {
        get
        {
            _process.Refresh();
            return _process.HasExited ? null : _process.TotalProcessorTime.TotalSeconds;
        }
    }

    public async Task<(double HeapMib, double CommittedMib)?> ReadManagedHeapAsync()
    {
        const double Mib = 1 << 20;
        return await RequestStatsAsync(SigUsr2).ConfigureAwait(false) is HostStats stats
            ? (stats.HeapBytes / Mib, stats.CommittedBytes / Mib)
            : null;
    }

    public Task<HostStats?> ReadStatsAsync() => RequestStatsAsync(SigUsr1);

    /// <summary>Sends our host <paramref name="signal"/> and waits for the printout it causes.</summary>
    private async Task<HostStats?> RequestStatsAsync(int signal)
    {
        if (!_printsStats || !OperatingSystem.IsLinux())
        {
            return null;
        }

        var printout = new TaskCompletionSource<HostStats>(TaskCreationOptions.RunContinuationsAsynchronously);
        Volatile.Write(ref _printout, printout);
        if (Kill(_process.Id, signal) != 0)
        {
            throw new InvalidOperationException($"{Name}: could not send signal {signal}: error {Marshal.GetLastPInvokeError()}");
        }

        return await printout.Task.WaitAsync(s_statsTimeout).ConfigureAwait(false);
    }

    /// <summary>The Node.js peer; it also exits by itself when its standard input closes, should this process die first.</summary>
    /// <param name="cpus">The CPUs to pin it to, as <c>taskset -c</c> takes them; null leaves it unpinned.</param>
    public static Task<ChildEchoServer> StartNodeAsync(string? cpus) =>
        StartAsync("node", printsStats: false, cpus, null, TcpReady, servesUdp: true, "node", Path.Combine(AppContext.BaseDirectory, "peers", "echo-server.js"), "0", "127.0.0.1");

    /// <summary>The C peer that <see cref="CPeerBuild"/> built; it also exits by itself when its standard input closes.</summary>
    /// <param name="program">The built server.</param>
    /// <param name="threads">Its worker threads; null for one per CPU it may run on.</param>
    /// <param name="cpus">The CPUs to pin it to, as <c>taskset -c</c> takes them; null leaves it unpinned.</param>
    public static Task<ChildEchoServer> StartCAsync(string program, int? threads, string? cpus) =>
        StartAsync("c-epoll", printsStats: false, cpus, null, TcpReady, servesUdp: true, program, ["0", .. threads is int n ? [n.ToString(CultureInfo.InvariantCulture)] : Array.Empty<string>()]);

    /// <summary>Our TCP and UDP servers in their own console host, with the given connection limit and buffer size.</summary>
    /// <param name="name">Its name in the tables.</param>
    /// <param name="cpus">The CPUs to pin it to, as <c>taskset -c</c> takes them; null leaves it unpinned.</param>
    /// <param name="environment">Variables to set in its environment (the GC's settings, for example).</param>
    public static Task<ChildEchoServer> StartOursAsync(string name, int maxConnections, int bufferSize, string? cpus, IReadOnlyDictionary<string, string> environment) =>
        StartAsync(
            name,
            printsStats: true,
            cpus,
            environment,
            TcpReady,
            servesUdp: true,
            "dotnet",
            Path.Combine(AppContext.BaseDirectory, "SocketServers.Host.dll"),
            "both",
            "--port",
            "0",
            "--max-connections",
            maxConnections.ToString(CultureInfo.InvariantCulture),
            "--buffer-size",
            bufferSize.ToString(CultureInfo.InvariantCulture));

    /// <summary>Kestrel with an echo <c>ConnectionHandler</c> (KestrelPeer/, built next to PoolBench); TCP only.</summary>
    /// <param name="cpus">The CPUs to pin it to, as <c>taskset -c</c> takes them; null leaves it unpinned.</param>
    public static Task<ChildEchoServer> StartKestrelAsync(string? cpus) =>
        StartAsync("kestrel", printsStats: false, cpus, null, TcpReady, servesUdp: false, "dotnet", Path.Combine(AppContext.BaseDirectory, "KestrelPeer.dll"));

    /// <summary>Our console host running the RESP sample (<c>resp</c>); TCP only, its stats as for echo.</summary>
    /// <param name="maxConnections">Its connection limit.</param>
    /// <param name="cpus">The CPUs to pin it to, as <c>taskset -c</c> takes them; null leaves it unpinned.</param>
    /// <param name="extraArguments">More of the host's options, such as <c>--tls-cert</c>.</param>
    public static Task<ChildEchoServer> StartOursRespAsync(int maxConnections, string? cpus, string[] extraArguments) =>
        StartAsync(
            "ours-resp",
            printsStats: true,
            cpus,
            null,
            RespReady,
            servesUdp: false,
            "dotnet",
            [Path.Combine(AppContext.BaseDirectory, "SocketServers.Host.dll"), "resp", "--port", "0", "--max-connections", maxConnections.ToString(CultureInfo.InvariantCulture), .. extraArguments]);

    public async ValueTask DisposeAsync()
    {
        Stop(_process);
        await _draining.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        _process.Dispose();
    }

    private static async Task<ChildEchoServer> StartAsync(
        string name, bool printsStats, string? cpus, IReadOnlyDictionary<string, string>? environment, string tcpReady, bool servesUdp, string program, params string[] arguments)
    {
        // taskset runs the program in its own process, so the pid is the server's.
        var start = cpus is null
            ? new ProcessStartInfo(program, arguments)
            : new ProcessStartInfo("taskset", ["-c", cpus, program, .. arguments]);
        start.RedirectStandardInput = true;
        start.RedirectStandardOutput = true;
        start.UseShellExecute = false;
        foreach ((string variable, string value) in environment ?? new Dictionary<string, string>())
        {
            start.Environment[variable] = value;
        }

        Process process = Process.Start(start) ?? throw new InvalidOperationException($"{start.FileName} did not start");
        try
        {
            using var timeout = new CancellationTokenSource(s_startTimeout);
            IPEndPoint? tcp = null, udp = null;
            while (tcp is null || (servesUdp && udp is null))
            {
                string line = await process.StandardOutput.ReadLineAsync(timeout.Token).ConfigureAwait(false)
                    ?? throw new InvalidOperationException($"{name} exited before it listened");
                tcp ??= line.StartsWith(tcpReady, StringComparison.Ordinal) ? IPEndPoint.Parse(line[tcpReady.Length..]) : null;
                udp ??= line.StartsWith(UdpReady, StringComparison.Ordinal) ? IPEndPoint.Parse(line[UdpReady.Length..]) : null;
            }

            s_log.Info("{0} server (pid {1}) listens on TCP {2} and UDP {3}", name, process.Id, tcp, udp?.ToString() ?? "(none)");
            return new ChildEchoServer(name, process, tcp, udp, printsStats);
        }
        catch (OperationCanceledException)
        {
            Stop(process);
            process.Dispose();
            throw new TimeoutException($"{name} did not listen within {s_startTimeout.TotalSeconds} s");
        }
        catch
        {
            Stop(process);
            process.Dispose();
            throw;
        }
    }

    /// <summary>Reads the child's output until it exits, handing each stats printout to the request waiting for it.</summary>
    private async Task DrainAsync()
    {
        long allocated = 0;
        long[] collections = [0, 0, 0];
        while (await _process.StandardOutput.ReadLineAsync().ConfigureAwait(false) is { } line)
        {
            // The collections and allocated lines come before the heap line, which ends a printout.
            if (line.StartsWith(CollectionStats, StringComparison.Ordinal)
                && line[CollectionStats.Length..].Split(' ') is ["gen0", string gen0, "gen1", string gen1, "gen2", string gen2])
            {
                collections = [Number(gen0), Number(gen1), Number(gen2)];
            }
            else if (line.StartsWith(AllocatedStats, StringComparison.Ordinal)
                && line[AllocatedStats.Length..].Split(' ') is [string total, "by_stats", string printed])
            {
                allocated = Number(total) - Number(printed);
            }
            else if (line.StartsWith(HeapStats, StringComparison.Ordinal)
                && line[HeapStats.Length..].Split(' ') is [string heap, "committed", string committed])
            {
                Volatile.Read(ref _printout).TrySetResult(
                    new HostStats(allocated, Number(heap), Number(committed), collections[0], collections[1], collections[2]));
            }
        }
    }

    private static long Number(string text) => long.Parse(text, CultureInfo.InvariantCulture);

    // A system call, rather than a kill process, so that asking allocates next to nothing in this process.
    [DllImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static extern int Kill(int pid, int signal);

    private static void Stop(Process process)
    {
        if (!process.HasExited)
        {
            process.Kill(entireProcessTree: true);
            process.WaitForExit(5000);
        }
    }
}
