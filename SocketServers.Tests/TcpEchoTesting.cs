using System.Net;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>What the TCP server tests share: starting a server on loopback, waiting for idle, checking it still serves.</summary>
internal static class TcpEchoTesting
{
    public const int KiB = 1024;
    public const int MiB = 1024 * KiB;

    /// <summary>Options for 127.0.0.1, port 0.</summary>
    public static TcpEchoServerOptions LoopbackOptions() => new() { Address = IPAddress.Loopback, Port = 0 };

    /// <summary>Starts a server on 127.0.0.1, port 0, with what <paramref name="configure"/> sets.</summary>
    public static Task<TcpEchoServer> StartAsync(Action<TcpEchoServerOptions>? configure = null, CancellationToken cancellationToken = default)
    {
        TcpEchoServerOptions options = LoopbackOptions();
        configure?.Invoke(options);
        return Started.StartAsync(new TcpEchoServer(options), cancellationToken);
    }

    /// <summary>Waits until no connection is open and every args but the accept loop's is back in the pool.</summary>
    public static Task WaitForIdleAsync(TcpEchoServer server, CancellationToken cancellationToken)
        => Poll.UntilAsync(
            () => server.Counters is { CurrentConnections: 0 } counters && counters.PoolAvailableCount == counters.PoolTotalCount - 1,
            cancellationToken);

    /// <summary>A new client gets its echo, and afterwards the pool is back to its baseline.</summary>
    public static async Task AssertStillServesAsync(TcpEchoServer server, CancellationToken cancellationToken)
    {
        await SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint!, 1000, cancellationToken);
        await WaitForIdleAsync(server, cancellationToken);
    }
}
