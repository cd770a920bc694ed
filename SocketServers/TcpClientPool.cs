using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// A pool of TCP connections to one server: each take hands out an open <see cref="TcpClientConnection"/> to send a
/// request on and read the reply from, made when none is idle and reused by the takes after it, up to
/// <see cref="PoolOptions.MaxCapacity"/> connections at once.
/// </summary>
/// <remarks>
/// <para>
/// Connections are made in the background (<see cref="PoolOptions.MaxConcurrentCreations"/> at once), each connect
/// bounded by <see cref="PoolOptions.CreateTimeout"/>; each made serves the oldest waiting take. A connect that fails
/// fails the waiting take with its <see cref="SocketException"/> (or <see cref="TimeoutException"/> at the timeout), and
/// the pool backs off (see <see cref="Pool{T}.ObjectConstructorAsync"/>): meanwhile a take that needs a new connection fails at once with
/// the same exception, without connecting. Once the server accepts again, the next connect after the back-off succeeds
/// and takes succeed again, with nothing to restart.
/// </para>
/// <para>
/// A take never hands out a connection that is broken (see <see cref="TcpClientConnection.IsBroken"/>), has an
/// operation in flight, or was closed or reset by the server while idle: a non-blocking check of the socket on every
/// take of an idle connection finds those, and the pool closes them and goes on with another. With
/// <see cref="TcpClientPoolOptions.HealthCheck"/> and <see cref="PoolOptions.ValidateAfterIdle"/>,
/// <see cref="Pool{T}.TakeSlotAsync"/> also checks a connection idle that long with a round trip.
/// </para>
/// <para>
/// Every member may be called from any thread. The pool's metrics are PoolLib's (the <c>PoolLib</c> meter), under its
/// <see cref="Pool{T}.Name"/>: by default named after the endpoint, as <c>tcp-client@127.0.0.1:6379</c>.
/// </para>
/// </remarks>
public sealed class TcpClientPool : Pool<TcpClientConnection>
{
    private readonly Func<TcpClientConnection, CancellationToken, ValueTask<bool>>? _healthCheck;
    private readonly TimeSpan? _keepAliveTime;
    private readonly TimeSpan _keepAliveInterval;
    private readonly int _keepAliveRetryCount;
    private readonly int? _receiveBufferSize;
    private readonly int? _sendBufferSize;
    private readonly TimeSpan? _connectTimeout;

    // The number of the last connection made.
    private long _lastId;

    // Set as Dispose begins: a connect cancelled after it is the pool's own doing, not a failure to report.
    private volatile bool _disposing;

    /// <summary>Creates a pool of connections to <paramref name="endPoint"/> with the default socket settings of
    /// <see cref="TcpClientPoolOptions"/>; it logs nothing, and connects at the first take (or now, for
    /// <see cref="PoolOptions.MinIdle"/>).</summary>
    /// <param name="endPoint">The server: an <see cref="IPEndPoint"/>, or a <see cref="DnsEndPoint"/> resolved at each connect.</param>
    /// <param name="options">The pool's cap, connect timeout and other options; read once, here.</param>
    /// <exception cref="ArgumentNullException"><paramref name="endPoint"/> or <paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="endPoint"/> is neither an <see cref="IPEndPoint"/> nor a
    /// <see cref="DnsEndPoint"/>, or an option is invalid (the exception's parameter name names it).</exception>
    public TcpClientPool(EndPoint endPoint, PoolOptions options)
        : this(OptionsFor(endPoint, options), logger: null)
    {
    }

    /// <summary>Creates a pool as <paramref name="options"/> say, which logs nothing; it connects at the first take (or
    /// now, for <see cref="PoolOptions.MinIdle"/>).</summary>
    /// <param name="options">Where to connect, the pool's options and the sockets' settings; read once, here.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><see cref="TcpClientPoolOptions.EndPoint"/> is <see langword="null"/>, or an
    /// option of <see cref="TcpClientPoolOptions.Pool"/> is invalid (the exception's parameter name names it).</exception>
    public TcpClientPool(TcpClientPoolOptions options)
        : this(options, logger: null)
    {
    }

    /// <summary>Creates a pool as <paramref name="options"/> say; it connects at the first take (or now, for
    /// <see cref="PoolOptions.MinIdle"/>).</summary>
    /// <param name="options">Where to connect, the pool's options and the sockets' settings; read once, here.</param>
    /// <param name="logger">Where the pool logs: connections opened and closed at Debug, failed connects and
    /// connections at Warning; <see langword="null"/> for nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><see cref="TcpClientPoolOptions.EndPoint"/> is <see langword="null"/>, or an
    /// option of <see cref="TcpClientPoolOptions.Pool"/> is invalid (the exception's parameter name names it).</exception>
    public TcpClientPool(TcpClientPoolOptions options, ILogger? logger)
        : base(Checked(options).Pool, DefaultName(options.EndPoint!))
    {
        EndPoint = options.EndPoint!;
        _healthCheck = options.HealthCheck;
        _keepAliveTime = options.KeepAliveTime;
        _keepAliveInterval = options.KeepAliveInterval;
        _keepAliveRetryCount = options.KeepAliveRetryCount;
        _receiveBufferSize = options.ReceiveBufferSize;
        _sendBufferSize = options.SendBufferSize;
        _connectTimeout = options.Pool.CreateTimeout;
        Logger = logger ?? NullLogger.Instance;
        StartFillingMinIdle();
    }

    /// <summary>Gets the server the pool connects to.</summary>
    public EndPoint EndPoint { get; }

    /// <summary>Gets where the pool and its connections log.</summary>
    internal ILogger Logger { get; }

    /// <summary>Gets the limiter of the warnings about single connects and connections, so that a server going down
    /// under many connections costs a few lines a second.</summary>
    internal LogRateLimiter Warnings { get; } = new();

    /// <summary>Connects a new socket to <see cref="EndPoint"/>, with <c>TCP_NODELAY</c> and, unless turned off, TCP
    /// keepalive.</summary>
    /// <param name="cancellationToken">Cancelled at <see cref="PoolOptions.CreateTimeout"/>, or when the pool is disposed.</param>
    /// <returns>The connection.</returns>
    /// <exception cref="SocketException">The connect failed: refused, unreachable, or the name did not resolve.</exception>
    protected override async ValueTask<TcpClientConnection> ObjectConstructorAsync(CancellationToken cancellationToken)
    {
        // A name may resolve to IPv4 or IPv6 addresses: a dual-mode socket connects to either.
        Socket socket = EndPoint.AddressFamily == AddressFamily.Unspecified
            ? new Socket(SocketType.Stream, ProtocolType.Tcp)
            : new Socket(EndPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            Configure(socket);
            await socket.ConnectAsync(EndPoint, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            socket.Dispose();
            if (!_disposing && Logger.IsEnabled(LogLevel.Warning) && Warnings.TryAcquire(out long suppressed))
            {
                Exception reported = ex is OperationCanceledException ? new TimeoutException($"No connection within the CreateTimeout of {_connectTimeout}.") : ex;
                Logger.ClientConnectFailed(reported, Display(EndPoint), LogRateLimiter.SuppressedNote(suppressed));
            }

            throw;
        }

        var connection = new TcpClientConnection(socket, Interlocked.Increment(ref _lastId), this);
        Logger.ClientConnectionOpened(connection.Id, connection.RemoteEndPoint, connection.LocalEndPoint);
        return connection;
    }

    /// <summary>Says whether an idle connection may be handed out: not broken, no operation in flight, and nothing to
    /// read, which a closed or reset socket has; one non-blocking poll of the socket, no round trip.</summary>
    /// <param name="object">The idle connection.</param>
    /// <returns><see langword="false"/> to close it.</returns>
    protected override bool Validate(TcpClientConnection @object) => @object.IsReusable();

    /// <summary>Runs <see cref="TcpClientPoolOptions.HealthCheck"/> on a connection idle longer than
    /// <see cref="PoolOptions.ValidateAfterIdle"/>, if there is one.</summary>
    /// <param name="object">The idle connection.</param>
    /// <param name="cancellationToken">The take's token.</param>
    /// <returns><see langword="false"/> to close it: the check said so, threw, or broke the connection.</returns>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    protected override ValueTask<bool> ValidateAsync(TcpClientConnection @object, CancellationToken cancellationToken) =>
        _healthCheck is null ? new ValueTask<bool>(true) : CheckHealthAsync(_healthCheck, @object, cancellationToken);

    /// <summary>Releases the pool's resources: closes the idle connections, and the rented ones as they come back.</summary>
    /// <param name="disposing"><see langword="true"/> when called from <see cref="Pool{T}.Dispose()"/>.</param>
    protected override void Dispose(bool disposing)
    {
        _disposing = true;
        base.Dispose(disposing);
    }

    private async ValueTask<bool> CheckHealthAsync(
        Func<TcpClientConnection, CancellationToken, ValueTask<bool>> healthCheck, TcpClientConnection connection, CancellationToken cancellationToken)
    {
        try
        {
            if (await healthCheck(connection, cancellationToken).ConfigureAwait(false) && !connection.IsBroken)
            {
                return true;
            }

            Logger.ClientHealthCheckFailed(connection.Id, connection.RemoteEndPoint);
            return false;
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            throw;
        }
        catch (Exception ex)
        {
            // A failed send or receive has said so already; anything else is the check's own failure.
            if (connection.IsBroken)
            {
                Logger.ClientHealthCheckFailed(connection.Id, connection.RemoteEndPoint);
            }
            else if (Logger.IsEnabled(LogLevel.Warning) && Warnings.TryAcquire(out long suppressed))
            {
                Logger.ClientHealthCheckThrew(ex, connection.Id, connection.RemoteEndPoint, LogRateLimiter.SuppressedNote(suppressed));
            }

            return false;
        }
    }

    private void Configure(Socket socket)
    {
        socket.NoDelay = true;
        if (_receiveBufferSize is { } receiveBufferSize)
        {
            socket.ReceiveBufferSize = receiveBufferSize;
        }

        if (_sendBufferSize is { } sendBufferSize)
        {
            socket.SendBufferSize = sendBufferSize;
        }

        if (_keepAliveTime is not { } keepAliveTime)
        {
            return;
        }

        socket.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.KeepAlive, true);
        try
        {
            socket.SetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveTime, (int)keepAliveTime.TotalSeconds);
            socket.SetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveInterval, (int)_keepAliveInterval.TotalSeconds);
            socket.SetSocketOption(SocketOptionLevel.Tcp, SocketOptionName.TcpKeepAliveRetryCount, _keepAliveRetryCount);
        }
        catch (SocketException)
        {
            // A system that does not let a socket choose its keepalive times: its own apply.
        }
    }

    private static TcpClientPoolOptions OptionsFor(EndPoint endPoint, PoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(endPoint);
        ArgumentNullException.ThrowIfNull(options);
        if (endPoint is not (IPEndPoint or DnsEndPoint))
        {
            throw new ArgumentException($"A TCP client connects to an IPEndPoint or a DnsEndPoint, not a {endPoint.GetType().Name}.", nameof(endPoint));
        }

        return new TcpClientPoolOptions { EndPoint = endPoint, Pool = options };
    }

    private static TcpClientPoolOptions Checked(TcpClientPoolOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        if (options.EndPoint is null)
        {
            throw new ArgumentException($"{nameof(TcpClientPoolOptions)}.{nameof(TcpClientPoolOptions.EndPoint)} is required: the server to connect to.", $"{nameof(options)}.{nameof(TcpClientPoolOptions.EndPoint)}");
        }

        return options;
    }

    private static string DefaultName(EndPoint endPoint) => $"tcp-client@{Display(endPoint)}";

    // A DnsEndPoint's own ToString() begins with its address family ("Unspecified/redis:6379").
    private static string Display(EndPoint endPoint) => endPoint is DnsEndPoint dns ? $"{dns.Host}:{dns.Port}" : endPoint.ToString()!;
}
