using Microsoft.Extensions.Logging;
using SocketServers.Echo;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// An RFC 862 echo server over UDP: every datagram is sent back to its sender. A <see cref="UdpServer"/> whose handler
/// returns each datagram as its own reply, from the buffer it was received in.
/// </summary>
/// <remarks>Thread safety: every member may be called from any thread.</remarks>
public sealed class UdpEchoServer : UdpServer
{
    /// <summary>Creates a UDP echo server with the default <see cref="UdpEchoServerOptions"/>
    /// (127.0.0.1, port <see cref="SocketServerOptions.DefaultPort"/>).</summary>
    public UdpEchoServer()
        : this(new UdpEchoServerOptions())
    {
    }

    /// <summary>Creates a UDP echo server that logs nothing; it does not bind until <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public UdpEchoServer(UdpEchoServerOptions options)
        : this(options, logger: null)
    {
    }

    /// <summary>Creates a UDP echo server; it does not bind until <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs: start and stop at Information, ICMP reports and failed replies at
    /// Debug, each echo at Trace, dropped datagrams and failures at Warning and Error; <see langword="null"/> for
    /// nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public UdpEchoServer(UdpEchoServerOptions options, ILogger? logger)
        : this(options, logger, time: null)
    {
    }

    /// <summary>Creates a UDP echo server whose per-sender reply limit runs on a test's clock.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <param name="time">The clock of the per-sender reply limit's windows; <see langword="null"/> for the system's.</param>
    internal UdpEchoServer(UdpEchoServerOptions options, ILogger? logger, TimeProvider? time)
        : base(options, EchoDatagramHandler.Instance, logger, time, poolKind: "udp-echo-args")
    {
    }

    private protected override bool IsEcho => true;
}
