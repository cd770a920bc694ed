using System.Diagnostics;
using System.Net;
using System.Text.Json;
using NLog;

namespace PoolBench;

/// <summary>
/// The Node.js echo server of <c>peers/echo-server.js</c>, run as a child process on free ports of
/// 127.0.0.1. It is ready when it prints its ports; disposing it kills the process, and the
/// script exits by itself when its standard input closes, should this process die first.
/// </summary>
internal sealed class NodeEchoPeer : IEchoServer
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly TimeSpan s_startTimeout = TimeSpan.FromSeconds(15);
    private readonly Process _process;

    private NodeEchoPeer(Process process, int tcpPort, int udpPort)
    {
        _process = process;
        TcpEndPoint = new IPEndPoint(IPAddress.Loopback, tcpPort);
        UdpEndPoint = new IPEndPoint(IPAddress.Loopback, udpPort);
    }

    public string Name => "node";

    public EndPoint TcpEndPoint { get; }

    public EndPoint UdpEndPoint { get; }

    public bool InProcess => false;

    public static async Task<NodeEchoPeer> StartAsync()
    {
        string script = Path.Combine(AppContext.BaseDirectory, "peers", "echo-server.js");
        var start = new ProcessStartInfo("node") { RedirectStandardInput = true, RedirectStandardOutput = true, UseShellExecute = false };
        start.ArgumentList.Add(script);
        start.ArgumentList.Add("0");
        start.ArgumentList.Add("127.0.0.1");
        Process process = Process.Start(start) ?? throw new InvalidOperationException("node did not start");
        try
        {
            string? line = await process.StandardOutput.ReadLineAsync().WaitAsync(s_startTimeout).ConfigureAwait(false);
            using JsonDocument ports = JsonDocument.Parse(line ?? throw new InvalidOperationException("node exited before it listened"));
            var peer = new NodeEchoPeer(process, ports.RootElement.GetProperty("tcp").GetInt32(), ports.RootElement.GetProperty("udp").GetInt32());
            s_log.Info("node echo peer (pid {0}) listens on TCP {1} and UDP {2}", process.Id, peer.TcpEndPoint, peer.UdpEndPoint);
            return peer;
        }
        catch
        {
            Stop(process);
            throw;
        }
    }

    public ValueTask DisposeAsync()
    {
        Stop(_process);
        return ValueTask.CompletedTask;
    }

    private static void Stop(Process process)
    {
        if (!process.HasExited)
        {
            process.Kill(entireProcessTree: true);
            process.WaitForExit(5000);
        }

        process.Dispose();
    }
}
