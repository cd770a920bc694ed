using System.Diagnostics;
using System.Globalization;
using System.Net;
using NLog;

namespace PoolBench;

/// <summary>
/// An echo server run as a child process on free ports of 127.0.0.1: the Node.js peer of
/// <c>peers/echo-server.js</c>, or our servers' console host. Both print
/// <c>tcp echo listening on ADDRESS:PORT</c> and the same for <c>udp</c>; the server is ready when
/// both lines have come. Its output is read until it exits, so a chatty log never blocks it;
/// disposing kills it. Its allocations happen in another process and are not measured.
/// </summary>
internal sealed class ChildEchoServer : IEchoServer
{
    private const string TcpReady = "tcp echo listening on ";
    private const string UdpReady = "udp echo listening on ";
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly TimeSpan s_startTimeout = TimeSpan.FromSeconds(30);

    private readonly Process _process;
    private readonly Task _draining;

    private ChildEchoServer(string name, Process process, EndPoint tcp, EndPoint udp)
    {
        Name = name;
        _process = process;
        TcpEndPoint = tcp;
        UdpEndPoint = udp;
        _draining = process.StandardOutput.BaseStream.CopyToAsync(Stream.Null);
    }

    public string Name { get; }

    public EndPoint TcpEndPoint { get; }

    public EndPoint UdpEndPoint { get; }

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

    /// <summary>The Node.js peer; it also exits by itself when its standard input closes, should this process die first.</summary>
    public static Task<ChildEchoServer> StartNodeAsync() =>
        StartAsync("node", "node", Path.Combine(AppContext.BaseDirectory, "peers", "echo-server.js"), "0", "127.0.0.1");

    /// <summary>Our TCP and UDP servers in their own console host, with the given connection limit and buffer size.</summary>
    public static Task<ChildEchoServer> StartOursAsync(int maxConnections, int bufferSize) =>
        StartAsync(
            "ours-process",
            "dotnet",
            Path.Combine(AppContext.BaseDirectory, "SocketServers.dll"),
            "both",
            "--port",
            "0",
            "--max-connections",
            maxConnections.ToString(CultureInfo.InvariantCulture),
            "--buffer-size",
            bufferSize.ToString(CultureInfo.InvariantCulture));

    public async ValueTask DisposeAsync()
    {
        Stop(_process);
        await _draining.ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        _process.Dispose();
    }

    private static async Task<ChildEchoServer> StartAsync(string name, string program, params string[] arguments)
    {
        var start = new ProcessStartInfo(program, arguments) { RedirectStandardInput = true, RedirectStandardOutput = true, UseShellExecute = false };
        Process process = Process.Start(start) ?? throw new InvalidOperationException($"{program} did not start");
        try
        {
            using var timeout = new CancellationTokenSource(s_startTimeout);
            IPEndPoint? tcp = null, udp = null;
            while (tcp is null || udp is null)
            {
                string line = await process.StandardOutput.ReadLineAsync(timeout.Token).ConfigureAwait(false)
                    ?? throw new InvalidOperationException($"{name} exited before it listened");
                tcp ??= line.StartsWith(TcpReady, StringComparison.Ordinal) ? IPEndPoint.Parse(line[TcpReady.Length..]) : null;
                udp ??= line.StartsWith(UdpReady, StringComparison.Ordinal) ? IPEndPoint.Parse(line[UdpReady.Length..]) : null;
            }

            s_log.Info("{0} echo server (pid {1}) listens on TCP {2} and UDP {3}", name, process.Id, tcp, udp);
            return new ChildEchoServer(name, process, tcp, udp);
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

    private static void Stop(Process process)
    {
        if (!process.HasExited)
        {
            process.Kill(entireProcessTree: true);
            process.WaitForExit(5000);
        }
    }
}
