using System.Net;
using SocketServers;

namespace PoolBench.Echo.Servers;

/// <summary>
/// Our TCP and UDP echo servers, started in this process on free ports of 127.0.0.1 with their
/// default settings, except a connection limit and a datagram size large enough for the load.
/// </summary>
internal sealed class OurEchoServer : IEchoServer
{
    private readonly TcpEchoServer _tcp;
    private readonly UdpEchoServer _udp;

    private OurEchoServer(TcpEchoServer tcp, UdpEchoServer udp)
    {
        _tcp = tcp;
        _udp = udp;
        TcpEndPoint = tcp.LocalEndPoint ?? throw new InvalidOperationException("the TCP echo server did not bind");
        UdpEndPoint = udp.LocalEndPoint ?? throw new InvalidOperationException("the UDP echo server did not bind");
    }

    public string Name => "ours";

    public EndPoint TcpEndPoint { get; }

    public EndPoint UdpEndPoint { get; }

    public Task<HostStats?> ReadStatsAsync() => Task.FromResult<HostStats?>(null);

    public bool InProcess => true;

    public double? ProcessMemoryMib => null;

    public double? ProcessCpuSeconds => null;

    public long? AcceptedTcpConnections => _tcp.Counters.TotalConnections;

    /// <summary>This process's heap: the server's, plus the benchmark's small and fixed share.</summary>
    public Task<(double HeapMib, double CommittedMib)?> ReadManagedHeapAsync() =>
        Task.FromResult<(double, double)?>((GC.GetTotalMemory(forceFullCollection: true) / (double)(1 << 20), GC.GetGCMemoryInfo().TotalCommittedBytes / (double)(1 << 20)));

    public static async Task<OurEchoServer> StartAsync(int maxConnections, int maxDatagramSize)
    {
        var tcp = new TcpEchoServer(new TcpEchoServerOptions { Address = IPAddress.Loopback, Port = 0, MaxConnections = maxConnections });
        var udpOptions = new UdpEchoServerOptions { Address = IPAddress.Loopback, Port = 0 };
        udpOptions.MaxDatagramSize = Math.Max(udpOptions.MaxDatagramSize, maxDatagramSize);
        var udp = new UdpEchoServer(udpOptions);
        try
        {
            await tcp.StartAsync().ConfigureAwait(false);
            await udp.StartAsync().ConfigureAwait(false);
            return new OurEchoServer(tcp, udp);
        }
        catch
        {
            await tcp.DisposeAsync().ConfigureAwait(false);
            await udp.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _tcp.DisposeAsync().ConfigureAwait(false);
        await _udp.DisposeAsync().ConfigureAwait(false);
    }
}
