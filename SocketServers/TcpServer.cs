using System.Diagnostics.CodeAnalysis;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Logging;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// A TCP server for a protocol of the user's: a <see cref="TcpConnectionHandler"/> handles what each connection receives
/// and writes its replies. Each connection runs on one pooled <see cref="SocketAsyncEventArgs"/>.
/// <see cref="TcpEchoServer"/> is the one whose handler echoes.
/// </summary>
/// <remarks>
/// The pool's capacity is <see cref="TcpServerOptions.MaxConnections"/>: at the cap, clients wait in the listen backlog
/// or are rejected, so memory stays bounded. An idle connection holds no buffer; a connection reads again only after
/// what the handler wrote was sent. SocketServers/README.md gives the stop, idle and eviction rules. Every member is thread-safe.
/// </remarks>
public partial class TcpServer : SocketServer, ITcpConnectionOwner, IConnectionPreambleOwner
{
    // Linux's struct tcp_info: IPPROTO_TCP, TCP_INFO, the part read, and where tcpi_unacked sits in it.
    private const int IpProtocolTcp = 6;
    private const int TcpInfoOption = 11;
    private const int TcpInfoSize = 104;
    private const int TcpInfoUnackedOffset = 24;

    // How long a receive buffer no connection needs stays allocated.
    private static readonly TimeSpan s_bufferIdleTimeout = TimeSpan.FromSeconds(10);

    private readonly IPEndPoint _endPoint;
    private readonly TimeSpan _idleTimeout;
    private readonly int _listenBacklog;
    private readonly int _bufferSize;
    private readonly int _maxConnections;
    private readonly bool _rejectWhenFull;
    private readonly TcpConnectionHandler _handler;

    // What a receive grows into for a message longer than the buffer, within the server's budget.
    private readonly LargeMessageBuffers _largeBuffers;

    // The kind in the pools' names: tcp-echo for the echo server (tcp-echo-args@127.0.0.1:7007).
    private readonly string _poolKind;

    // Warnings that a flood of failing clients could repeat without end: a few lines a second.
    private readonly LogRateLimiter _connectionWarnings = new();

    // What the accept loop does after an accept that failed.
    private readonly AcceptFailures _acceptFailures;

    // Open connections per client address, and whether one more may open.
    private readonly PerAddressConnectionLimit _perAddressLimit;

    // Every open connection, and the sweep that closes idle ones and evicts slow ones.
    private readonly IdleAndSlowConnectionSweep _sweep;

    // Milliseconds, monotonic, for the connections and the sweep.
    private readonly MillisecondClock _clock;

    // The receive buffers, lent to a connection only while data is there (or part of a message waits for the rest), and
    // the send buffers, lent while it has output; one of each per connection at most, so a take never waits, and idle
    // ones go back to the GC after a while. Created by StartCore, named for the endpoint.
    private Pool<byte[]>? _buffers;
    private Pool<byte[]>? _sendBuffers;

    // Completed once draining has begun and no connection is left open.
    private readonly TaskCompletionSource _drained = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private Socket? _listener;
    private Task _acceptLoop = Task.CompletedTask;
    private Task _sweepLoop = Task.CompletedTask;

    // Ends the sweep once the stop has drained the connections, not when it begins: lingers end during the stop too.
    private readonly CancellationTokenSource _sweepStop = new();
    private long _lastConnectionId;

    // 1 once the accept loop has ended and the drain has begun; with _holdingSlots it decides who completes _drained
    // (both sides write, fence, then read the other's value).
    private int _draining;

    // Connections whose args is not back in the pool yet. The open-connection count drops before a closing connection
    // gives its slot back (so that the connection accepted on that slot never counts beside it); this drops after.
    private int _holdingSlots;

    /// <summary>Creates a TCP server whose connections <paramref name="handler"/> serves; it does not bind until
    /// <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="handler">The protocol: called for every connection.</param>
    /// <param name="logger">Where the server logs: start and stop at Information, connections at Debug, each receive at
    /// Trace, failures at Warning and Error; <see langword="null"/> for nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="handler"/> is <see langword="null"/>.</exception>
    [SuppressMessage("ApiDesign", "RS0022", Justification = "SocketServer has no protected members for a subclass to reach.")]
    public TcpServer(TcpServerOptions options, TcpConnectionHandler handler, ILogger? logger = null)
        : this(options, handler, logger, time: null, poolKind: "tcp")
    {
    }

    /// <summary>Creates a TCP server that runs its sweep and its connections' timestamps on a test's clock.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="handler">The protocol: called for every connection.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <param name="time">What the idle and slow-connection sweep and the connections' timestamps run on;
    /// <see langword="null"/> for the system's.</param>
    /// <param name="poolKind">The kind in the pools' names.</param>
    private protected TcpServer(TcpServerOptions options, TcpConnectionHandler handler, ILogger? logger, TimeProvider? time, string poolKind)
        : base(options ?? throw new ArgumentNullException(nameof(options)), bufferSize: 0, poolKind: poolKind + "-args", logger)
    {
        ArgumentNullException.ThrowIfNull(handler);
        _handler = handler;
        _poolKind = poolKind;
        _bufferSize = options.BufferSize;
        if (options.MaxMessageSize < options.BufferSize)
        {
            throw new ArgumentOutOfRangeException(nameof(options), options.MaxMessageSize, $"{nameof(TcpServerOptions.MaxMessageSize)} ({options.MaxMessageSize}) is less than {nameof(TcpServerOptions.BufferSize)} ({options.BufferSize}).");
        }

        _largeBuffers = new LargeMessageBuffers(options.BufferSize, options.MaxMessageSize, LargeMessageBuffers.BudgetFor(options.BufferSize, options.MaxMessageSize, options.MaxConnections));
        _endPoint = options.EndPoint;
        _idleTimeout = options.IdleTimeout;
        _listenBacklog = options.ListenBacklog;
        _maxConnections = options.MaxConnections;
        _rejectWhenFull = options.RejectWhenFull;
        _perAddressLimit = new PerAddressConnectionLimit(options.MaxConnectionsPerAddress);
        _acceptFailures = new AcceptFailures(this, Logger);
        time ??= TimeProvider.System;
        _clock = new MillisecondClock(time);
        _preamble = ConnectionPreamble.Create(this, this, Logger, options);
        _sweep = new IdleAndSlowConnectionSweep(options.IdleTimeout, options.MinDataRate, options.SlowConnectionWindow, time, _clock);
    }

    /// <inheritdoc/>
    public override ProtocolType Protocol => ProtocolType.Tcp;

    private protected override string HandlerTypeName => _handler.GetType().Name;

    private protected override IPEndPoint StartCore()
    {
        _preamble?.Tls?.Start();
        Socket listener = BindSocket(_endPoint, _listenBacklog);
        var bound = (IPEndPoint)listener.LocalEndPoint!;
        CreatePool(bound, _maxConnections);
        _buffers = CreateBuffers(PoolName(_poolKind + "-buffers", bound));
        _sendBuffers = CreateBuffers(PoolName(_poolKind + "-send-buffers", bound));
        _listener = listener;
        _acceptLoop = RunRestartingAsync(() => AcceptLoopAsync(listener), "accept");
        _sweepLoop = RunRestartingAsync(() => _sweep.RunAsync(WaitingClients, _sweepStop.Token), "sweep");

        Logger.TcpListening(
            Name,
            bound,
            Pool.MaxCapacity,
            _bufferSize,
            _idleTimeout == Timeout.InfiniteTimeSpan ? "none" : $"{_idleTimeout.TotalSeconds} s");
        return bound;
    }

    private protected override async Task StopReceivingAsync()
    {
        _listener?.Dispose();
        await _acceptLoop.ConfigureAwait(false);
        if (_preamble is { } preamble)
        {
            await preamble.WhenDoneAsync().ConfigureAwait(false);
        }
    }

    private protected override Task DrainAsync()
    {
        Interlocked.Exchange(ref _draining, 1);
        _sweep.ForEach(static connection => connection.StopGracefully());
        int open = Volatile.Read(ref _holdingSlots);
        if (open == 0)
        {
            _drained.TrySetResult();
        }
        else
        {
            Logger.TcpStopping(Name, LocalEndPoint, open);
        }

        return _drained.Task;
    }

    private protected override void Abort()
    {
        Logger.TcpGracePeriodOver(Name, LocalEndPoint, Count.OpenConnections);
        _sweep.ForEach(static connection => connection.Abort());
    }

    /// <inheritdoc/>
    /// <remarks>Read from the listening socket's TCP_INFO, whose unacked field counts a listener's accept queue.</remarks>
    internal override long QueuedConnections
    {
        get
        {
            if (!OperatingSystem.IsLinux() || _listener is not { } listener)
            {
                return 0;
            }

            Span<byte> info = stackalloc byte[TcpInfoSize];
            try
            {
                int length = listener.GetRawSocketOption(IpProtocolTcp, TcpInfoOption, info);
                return length >= TcpInfoUnackedOffset + sizeof(uint) ? MemoryMarshal.Read<uint>(info[TcpInfoUnackedOffset..]) : 0;
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
            {
                return 0;
            }
        }
    }

    private static int InUse(Pool<byte[]>? buffers) => buffers is null ? 0 : buffers.TotalCount - buffers.AvailableCount;

    /// <summary>A pool of pinned buffers of the configured size, one per connection at most.</summary>
    private Pool<byte[]> CreateBuffers(string name)
    {
        int bufferSize = _bufferSize;
        return PoolLib.Pool.Create(
            new PoolOptions { MaxCapacity = _maxConnections, Name = name, IdleTimeout = s_bufferIdleTimeout },
            () => GC.AllocateArray<byte>(bufferSize, pinned: true));
    }

    /// <summary>Gets how many receive and send buffers connections hold right now; for tests that check idle connections hold none.</summary>
    internal int BuffersInUse => InUse(_buffers) + InUse(_sendBuffers);

    /// <summary>Gets what a receive grows into for a message longer than the buffer; for tests of its budget.</summary>
    internal LargeMessageBuffers LargeBuffers => _largeBuffers;

    private protected override async Task CloseAsync(bool handlerCallsLeft)
    {
        await _sweepStop.CancelAsync().ConfigureAwait(false);
        await _sweepLoop.ConfigureAwait(false);
        Logger.TcpStopped(Name, LocalEndPoint, Counters);
        _buffers?.Dispose();
        _sendBuffers?.Dispose();
        _preamble?.Dispose();
    }

    TcpConnectionHandler ITcpConnectionOwner.Handler => _handler;

    MillisecondClock ITcpConnectionOwner.Clock => _clock;

    ILogger ITcpConnectionOwner.Logger => Logger;

    LiveCounters ITcpConnectionOwner.Count => Count;

    Pool<byte[]> ITcpConnectionOwner.Buffers => _buffers!;

    Pool<byte[]> ITcpConnectionOwner.SendBuffers => _sendBuffers!;

    LargeMessageBuffers ITcpConnectionOwner.LargeBuffers => _largeBuffers;

    LogRateLimiter ITcpConnectionOwner.ConnectionWarnings => _connectionWarnings;

    void ITcpConnectionOwner.OnHandlerFailed(Exception exception) => SocketServerMetrics.Error(this, "handler", SocketServerMetrics.ErrorType(exception));

    void ITcpConnectionOwner.OnMessageTooLarge(string reason) => SocketServerMetrics.MessageTooLarge(this, reason);

    void ITcpConnectionOwner.OnConnectionClosed(SocketConnection connection, TimeSpan duration)
    {
        SocketServerMetrics.ConnectionClosed(this, duration);
        _sweep.Remove(connection);
        _perAddressLimit.Release(connection.RemoteAddress);
        Count.ConnectionClosed();
        try
        {
            Pool.Release(connection.Slot);
        }
        finally
        {
            if (Interlocked.Decrement(ref _holdingSlots) == 0 && Volatile.Read(ref _draining) == 1)
            {
                _drained.TrySetResult();
            }
        }
    }
}
