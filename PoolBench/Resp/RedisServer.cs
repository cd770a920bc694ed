using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using NLog;

namespace PoolBench.Resp;

/// <summary>Debian's redis-server on a free port of 127.0.0.1, with no persistence; disposing stops it.</summary>
internal sealed class RedisServer : IDisposable
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private readonly Process _process;

    private RedisServer(Process process, IPEndPoint endPoint)
    {
        _process = process;
        EndPoint = endPoint;
    }

    public IPEndPoint EndPoint { get; }

    /// <summary>Starts the server and returns once it accepts a connection.</summary>
    /// <param name="program">redis-server's path.</param>
    /// <param name="cpus">The CPUs to pin it to, as <c>taskset -c</c> takes them; null leaves it unpinned.</param>
    /// <param name="tls">When given, it serves TLS only (<c>--tls-port</c>), with this certificate.</param>
    public static async Task<RedisServer> StartAsync(string program, string? cpus, TlsFiles? tls = null)
    {
        int port;
        using (var probe = new TcpListener(IPAddress.Loopback, 0))
        {
            probe.Start();
            port = ((IPEndPoint)probe.LocalEndpoint).Port;
        }

        string[] listen = tls is null
            ? ["--port", Text(port)]
            : ["--port", "0", "--tls-port", Text(port), "--tls-cert-file", tls.CertificatePath, "--tls-key-file", tls.KeyPath, "--tls-auth-clients", "no"];
        string[] arguments = [.. listen, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no"];
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

    private static string Text(int value) => value.ToString(CultureInfo.InvariantCulture);
}
