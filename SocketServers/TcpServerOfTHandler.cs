using Microsoft.Extensions.Logging;

namespace SocketServers;

/// <summary>A <see cref="TcpServer"/> typed by its handler, so that a container tells servers of different protocols
/// apart (see <see cref="SocketServerServiceCollectionExtensions.AddTcpServer{THandler}(Microsoft.Extensions.DependencyInjection.IServiceCollection, Action{TcpServerOptions})"/>).</summary>
/// <typeparam name="THandler">The protocol.</typeparam>
/// <remarks>Thread safety: every member may be called from any thread.</remarks>
public sealed class TcpServer<THandler> : TcpServer
    where THandler : TcpConnectionHandler
{
    /// <summary>Creates a TCP server whose connections <paramref name="handler"/> serves; it does not bind until
    /// <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="handler">The protocol: called for every connection.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="handler"/> is <see langword="null"/>.</exception>
    public TcpServer(TcpServerOptions options, THandler handler, ILogger? logger = null)
        : base(options, handler, logger)
    {
        Handler = handler;
    }

    /// <summary>Gets the handler that serves the connections.</summary>
    public THandler Handler { get; }
}
