using Microsoft.Extensions.Logging;
using SocketServers.Echo;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// An RFC 862 echo server over TCP: every byte received on a connection is sent back on it, in order, until the client
/// closes. A <see cref="TcpServer"/> whose handler writes back what it receives.
/// </summary>
/// <remarks>
/// A client's half-close (<c>Shutdown(Send)</c>) gets every byte echoed, then end of stream. A stop ends each
/// connection's stream after the echo of what it has read. Thread safety: every member may be called from any thread.
/// </remarks>
public sealed class TcpEchoServer : TcpServer
{
    /// <summary>Creates a TCP echo server with the default <see cref="TcpEchoServerOptions"/>
    /// (127.0.0.1, port <see cref="SocketServerOptions.DefaultPort"/>).</summary>
    public TcpEchoServer()
        : this(new TcpEchoServerOptions())
    {
    }

    /// <summary>Creates a TCP echo server that logs nothing; it does not bind until <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public TcpEchoServer(TcpEchoServerOptions options)
        : this(options, logger: null)
    {
    }

    /// <summary>Creates a TCP echo server; it does not bind until <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs: start and stop at Information, connections at Debug, each echo at
    /// Trace, failures at Warning and Error; <see langword="null"/> for nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public TcpEchoServer(TcpEchoServerOptions options, ILogger? logger)
        : this(options, logger, time: null)
    {
    }

    /// <summary>Creates a TCP echo server that runs its sweep and its connections' timestamps on a test's clock.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <param name="time">What the idle and slow-connection sweep and the connections' timestamps run on;
    /// <see langword="null"/> for the system's.</param>
    internal TcpEchoServer(TcpEchoServerOptions options, ILogger? logger, TimeProvider? time)
        : base(options, EchoConnectionHandler.Instance, logger, time, poolKind: "tcp-echo")
    {
    }

    private protected override bool IsEcho => true;
}
