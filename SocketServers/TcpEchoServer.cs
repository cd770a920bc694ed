using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Logging;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// An RFC 862 echo server over TCP: every byte received on a connection is sent back on it, in order,
/// until the client closes. Each connection runs on one pooled <see cref="SocketAsyncEventArgs"/>.
/// </summary>
/// <remarks>
/// <para>
/// The accept loop takes an args from the pool before each accept; the pool's capacity is
/// <see cref="TcpEchoServerOptions.MaxConnections"/>, so at the limit the loop waits for a connection to end
/// and further clients wait in the kernel's listen backlog: memory stays bounded under a flood. A connection
/// receives into its args' buffer, sends it all back (completing partial sends), and receives again;
/// operations that complete synchronously continue the same loop, never a nested call.
/// </para>
/// <para>
/// A client's half-close (<c>Shutdown(Send)</c>) gets every byte echoed, then end of stream. A stop ends each
/// connection's stream after the echo of what it has read, and closes the connection when the client does, so
/// that the client reads every echoed byte. Resets are
/// logged at Debug. A connection that neither receives nor sends for
/// <see cref="TcpEchoServerOptions.IdleTimeout"/> is closed by one periodic sweep.
/// </para>
/// <para>
/// An accept that fails is logged and tried again after a short pause. The accept loop and the sweep, if they throw,
/// are logged at Error, counted in the <c>echo.errors</c> metric and started again after the same pause.
/// </para>
/// <para>Thread safety: every member may be called from any thread.</para>
/// </remarks>
public sealed partial class TcpEchoServer : EchoServer, ITcpConnectionOwner
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

    // Warnings that a flood of failing clients could repeat without end: a few lines a second each.
    private readonly LogRateLimiter _acceptWarnings = new();
    private readonly LogRateLimiter _connectionWarnings = new();

    // Open connections per client address, and whether one more may open.
    private readonly PerAddressConnectionLimit _perAddressLimit;

    // Every open connection, and the sweep that closes idle ones and evicts slow ones.
    private readonly IdleAndSlowConnectionSweep _sweep;

    // Milliseconds, monotonic, for the connections and the sweep; null for Environment.TickCount64, read directly.
    private readonly Func<long>? _clock;

    // The receive buffers, lent to a connection only while data is there; one per connection at most,
    // so a take never waits, and idle ones go back to the GC after a while. Created by StartCore, named for the endpoint.
    private Pool<byte[]>? _buffers;

    // Completed once draining has begun and no connection is left open.
    private readonly TaskCompletionSource _drained = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private Socket? _listener;
    private Task _acceptLoop = Task.CompletedTask;
    private Task _sweepLoop = Task.CompletedTask;
    private long _lastConnectionId;

    // 1 once the accept loop has ended and the drain has begun; with the open-connection count it decides
    // who completes _drained (both sides write, fence, then read the other's value).
    private int _draining;

    /// <summary>Creates a TCP echo server with the default <see cref="TcpEchoServerOptions"/>
    /// (127.0.0.1, port <see cref="EchoServerOptions.DefaultPort"/>).</summary>
    public TcpEchoServer()
        : this(new TcpEchoServerOptions())
    {
    }

    /// <summary>Creates a TCP echo server that logs nothing; it does not bind until <see cref="EchoServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public TcpEchoServer(TcpEchoServerOptions options)
        : this(options, logger: null)
    {
    }

    /// <summary>Creates a TCP echo server; it does not bind until <see cref="EchoServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs: start and stop at Information, connections at Debug, each echo at
    /// Trace, failures at Warning and Error; <see langword="null"/> for nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public TcpEchoServer(TcpEchoServerOptions options, ILogger? logger)
        : this(options, logger, faults: null)
    {
    }

    /// <summary>Creates a TCP echo server that meets the faults a test injects.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <param name="faults">The faults to inject; <see langword="null"/> for none.</param>
    internal TcpEchoServer(TcpEchoServerOptions options, ILogger? logger, FaultInjection? faults)
        : this(options, logger, faults, time: null)
    {
    }

    /// <summary>Creates a TCP echo server that meets the faults a test injects and runs its sweep on a test's clock.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <param name="faults">The faults to inject; <see langword="null"/> for none.</param>
    /// <param name="time">What the idle and slow-connection sweep and the connections' timestamps run on;
    /// <see langword="null"/> for the system's.</param>
    internal TcpEchoServer(TcpEchoServerOptions options, ILogger? logger, FaultInjection? faults, TimeProvider? time)
        : base(options ?? throw new ArgumentNullException(nameof(options)), bufferSize: 0, options.MaxConnections, poolKind: "tcp-echo-args", logger, faults)
    {
        _bufferSize = options.BufferSize;
        _endPoint = options.EndPoint;
        _idleTimeout = options.IdleTimeout;
        _listenBacklog = options.ListenBacklog;
        _maxConnections = options.MaxConnections;
        _rejectWhenFull = options.RejectWhenFull;
        _perAddressLimit = new PerAddressConnectionLimit(options.MaxConnectionsPerAddress);
        time ??= TimeProvider.System;
        _clock = time == TimeProvider.System ? null : () => time.GetTimestamp() / (time.TimestampFrequency / 1000);
        _sweep = new IdleAndSlowConnectionSweep(options.IdleTimeout, options.MinDataRate, options.SlowConnectionWindow, Faults.BeforeSweep, time, _clock);
    }

    /// <inheritdoc/>
    public override ProtocolType Protocol => ProtocolType.Tcp;

    private protected override IPEndPoint StartCore()
    {
        Socket listener = BindSocket(_endPoint, _listenBacklog);
        var bound = (IPEndPoint)listener.LocalEndPoint!;
        CreatePool(bound);
        int bufferSize = _bufferSize;
        _buffers = PoolLib.Pool.Create(
            new PoolOptions { MaxCapacity = _maxConnections, Name = PoolName("tcp-echo-buffers", bound), IdleTimeout = s_bufferIdleTimeout },
            () => GC.AllocateArray<byte>(bufferSize, pinned: true));
        _listener = listener;
        _acceptLoop = RunRestartingAsync(() => AcceptLoopAsync(listener), "accept");
        if (_sweep.IsNeeded)
        {
            _sweepLoop = RunRestartingAsync(() => _sweep.RunAsync(WaitingClients, StoppingToken), "sweep");
        }

        Logger.TcpListening(
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
        await _sweepLoop.ConfigureAwait(false);
    }

    private protected override Task DrainAsync()
    {
        Interlocked.Exchange(ref _draining, 1);
        _sweep.ForEach(static connection => connection.StopGracefully());
        int open = Count.OpenConnections;
        if (open == 0)
        {
            _drained.TrySetResult();
        }
        else
        {
            Logger.TcpStopping(LocalEndPoint, open);
        }

        return _drained.Task;
    }

    private protected override void Abort()
    {
        Logger.TcpGracePeriodOver(LocalEndPoint, Count.OpenConnections);
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

    /// <summary>Gets how many receive buffers connections hold right now; for tests that check idle connections hold none.</summary>
    internal int BuffersInUse => _buffers is { } buffers ? buffers.TotalCount - buffers.AvailableCount : 0;

    private protected override Task CloseAsync()
    {
        Logger.TcpStopped(LocalEndPoint, Counters);
        _buffers?.Dispose();
        return Task.CompletedTask;
    }

    Func<long>? ITcpConnectionOwner.Clock => _clock;

    ILogger ITcpConnectionOwner.Logger => Logger;

    LiveCounters ITcpConnectionOwner.Count => Count;

    Pool<byte[]> ITcpConnectionOwner.Buffers => _buffers!;

    LogRateLimiter ITcpConnectionOwner.ConnectionWarnings => _connectionWarnings;

    void ITcpConnectionOwner.OnConnectionClosed(TcpConnection connection, TimeSpan duration)
    {
        EchoMetrics.ConnectionClosed(this, duration);
        _sweep.Remove(connection);
        _perAddressLimit.Release(connection.RemoteAddress);
        try
        {
            Pool.Release(connection.Slot);
        }
        finally
        {
            if (Count.ConnectionClosed() == 0 && Volatile.Read(ref _draining) == 1)
            {
                _drained.TrySetResult();
            }
        }
    }
}
