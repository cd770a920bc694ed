using System.Globalization;
using System.Net;

namespace PoolBench.Echo.Servers;

/// <summary>An echo server someone else started, named by <c>--target host:port</c> (TCP and UDP on that port).</summary>
internal sealed class TargetEchoServer : IEchoServer
{
    private TargetEchoServer(string name, IPEndPoint endPoint)
    {
        Name = name;
        TcpEndPoint = endPoint;
        UdpEndPoint = endPoint;
    }

    public string Name { get; }

    public EndPoint TcpEndPoint { get; }

    public EndPoint UdpEndPoint { get; }

    public Task<HostStats?> ReadStatsAsync() => Task.FromResult<HostStats?>(null);

    public bool InProcess => false;

    public double? ProcessMemoryMib => null;

    public double? ProcessCpuSeconds => null;

    public long? AcceptedTcpConnections => null;

    public Task<(double HeapMib, double CommittedMib)?> ReadManagedHeapAsync() => Task.FromResult<(double, double)?>(null);

    /// <summary>Resolves one <c>--target</c> entry: <c>host:port</c>, or <c>name=host:port</c> to name it in the tables.</summary>
    public static async Task<TargetEchoServer> ResolveAsync(string entry)
    {
        int equals = entry.IndexOf('=', StringComparison.Ordinal);
        string target = equals < 0 ? entry : entry[(equals + 1)..];
        string name = equals < 0 ? entry : entry[..equals];
        if (IPEndPoint.TryParse(target, out IPEndPoint? endPoint) && endPoint.Port != 0)
        {
            return new TargetEchoServer(name, endPoint);
        }

        int colon = target.LastIndexOf(':');
        if (colon <= 0 || !int.TryParse(target.AsSpan(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out int port) || port is < 1 or > 65535)
        {
            throw new ArgumentException($"--target must be host:port, not '{target}'");
        }

        IPAddress[] addresses = await Dns.GetHostAddressesAsync(target[..colon]).ConfigureAwait(false);
        return addresses.Length > 0
            ? new TargetEchoServer(name, new IPEndPoint(addresses[0], port))
            : throw new ArgumentException($"--target host '{target[..colon]}' has no address");
    }

    public ValueTask DisposeAsync() => ValueTask.CompletedTask;
}
