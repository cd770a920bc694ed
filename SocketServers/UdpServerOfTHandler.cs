using Microsoft.Extensions.Logging;

namespace SocketServers;

/// <summary>A <see cref="UdpServer"/> typed by its handler, so that a container tells servers of different protocols
/// apart (see <see cref="SocketServerServiceCollectionExtensions.AddUdpServer{THandler}(Microsoft.Extensions.DependencyInjection.IServiceCollection, Action{UdpServerOptions})"/>).</summary>
/// <typeparam name="THandler">The protocol.</typeparam>
/// <remarks>Thread safety: every member may be called from any thread.</remarks>
public sealed class UdpServer<THandler> : UdpServer
    where THandler : UdpDatagramHandler
{
    /// <summary>Creates a UDP server that answers datagrams with <paramref name="handler"/>; it does not bind until
    /// <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="handler">What answers each datagram.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="handler"/> is <see langword="null"/>.</exception>
    public UdpServer(UdpServerOptions options, THandler handler, ILogger? logger = null)
        : base(options, handler, logger)
    {
        Handler = handler;
    }

    /// <summary>Gets the handler that answers the datagrams.</summary>
    public THandler Handler { get; }
}
