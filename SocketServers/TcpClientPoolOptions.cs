using System.Net;
using PoolLib;

namespace SocketServers;

/// <summary>Settings of a <see cref="TcpClientPool"/>: where it connects, how its pool is sized and timed, and how each
/// connection's socket is set up.</summary>
/// <remarks>
/// Every setter checks its value, and the pool checks the whole when it is constructed; it copies the values then, so
/// changing the options afterwards does not affect it. Not thread-safe.
/// </remarks>
public sealed class TcpClientPoolOptions
{
    /// <summary>The default of <see cref="KeepAliveTime"/>: 60 seconds.</summary>
    public static readonly TimeSpan DefaultKeepAliveTime = TimeSpan.FromSeconds(60);

    /// <summary>The default of <see cref="KeepAliveInterval"/>: 10 seconds.</summary>
    public static readonly TimeSpan DefaultKeepAliveInterval = TimeSpan.FromSeconds(10);

    /// <summary>The default of <see cref="KeepAliveRetryCount"/>.</summary>
    public const int DefaultKeepAliveRetryCount = 3;

    // The kernel counts keepalive times in whole seconds, at most 32767 on Linux.
    private static readonly TimeSpan s_longestKeepAlive = TimeSpan.FromSeconds(short.MaxValue);

    private EndPoint? _endPoint;
    private PoolOptions _pool = new();
    private TimeSpan? _keepAliveTime = DefaultKeepAliveTime;
    private TimeSpan _keepAliveInterval = DefaultKeepAliveInterval;
    private int _keepAliveRetryCount = DefaultKeepAliveRetryCount;
    private int? _receiveBufferSize;
    private int? _sendBufferSize;

    /// <summary>Gets or sets the server to connect to: an <see cref="IPEndPoint"/>, or a <see cref="DnsEndPoint"/> whose
    /// name is resolved at each connect. Required.</summary>
    /// <exception cref="ArgumentException">The value is neither an <see cref="IPEndPoint"/> nor a <see cref="DnsEndPoint"/>.</exception>
    public EndPoint? EndPoint
    {
        get => _endPoint;
        set
        {
            if (value is not (null or IPEndPoint or DnsEndPoint))
            {
                throw new ArgumentException($"A TCP client connects to an IPEndPoint or a DnsEndPoint, not a {value.GetType().Name}.", nameof(EndPoint));
            }

            _endPoint = value;
        }
    }

    /// <summary>Gets or sets the pool's options: its cap (<see cref="PoolOptions.MaxCapacity"/>, required), the connect
    /// timeout (<see cref="PoolOptions.CreateTimeout"/>), how many connects run at once
    /// (<see cref="PoolOptions.MaxConcurrentCreations"/>), idle connections kept open (<see cref="PoolOptions.MinIdle"/>),
    /// when <see cref="HealthCheck"/> runs (<see cref="PoolOptions.ValidateAfterIdle"/>), and its name in metrics
    /// (by default named after the endpoint, as <c>tcp-client@127.0.0.1:6379</c>).</summary>
    /// <exception cref="ArgumentNullException">The value is <see langword="null"/>.</exception>
    public PoolOptions Pool
    {
        get => _pool;
        set
        {
            ArgumentNullException.ThrowIfNull(value, nameof(Pool));
            _pool = value;
        }
    }

    /// <summary>Gets or sets a round trip that says whether an idle connection still works (a ping), run by
    /// <see cref="Pool{T}.TakeSlotAsync"/> on a connection idle longer than <see cref="PoolOptions.ValidateAfterIdle"/>
    /// before it hands it out; <see langword="null"/> (the default) for none.</summary>
    /// <remarks>
    /// It gets the connection and the take's token, and returns <see langword="false"/> for a connection to close; the
    /// take then goes on with another idle connection or a new one. One that throws counts as <see langword="false"/>,
    /// but for an <see cref="OperationCanceledException"/> of the take's token, which ends the take. It must read the
    /// whole reply, so that the connection is left with nothing unread.
    /// </remarks>
    public Func<TcpClientConnection, CancellationToken, ValueTask<bool>>? HealthCheck { get; set; }

    /// <summary>Gets or sets how long a connection may be quiet before the system sends a TCP keepalive probe, in whole
    /// seconds, 1 second to about 9 hours; <see langword="null"/> to send none. <see cref="DefaultKeepAliveTime"/> by
    /// default.</summary>
    /// <remarks>
    /// With <see cref="KeepAliveInterval"/> and <see cref="KeepAliveRetryCount"/>, a peer that vanished without closing
    /// (a host down, a firewall that forgot the connection) is found after at most time + interval × count, 90 seconds by
    /// default: the connection's next call fails, and an idle one is not handed out again. Where the system does not let
    /// a socket choose these times, its own defaults apply.
    /// </remarks>
    /// <exception cref="ArgumentOutOfRangeException">The value is under a second or over 32767 seconds.</exception>
    public TimeSpan? KeepAliveTime
    {
        get => _keepAliveTime;
        set => _keepAliveTime = value is { } time ? CheckKeepAlive(time, nameof(KeepAliveTime)) : null;
    }

    /// <summary>Gets or sets how long the system waits between unanswered TCP keepalive probes, in whole seconds, 1 to
    /// 32767; <see cref="DefaultKeepAliveInterval"/> by default.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is under a second or over 32767 seconds.</exception>
    public TimeSpan KeepAliveInterval
    {
        get => _keepAliveInterval;
        set => _keepAliveInterval = CheckKeepAlive(value, nameof(KeepAliveInterval));
    }

    /// <summary>Gets or sets how many TCP keepalive probes go unanswered before the system drops the connection, 1 to
    /// 127; <see cref="DefaultKeepAliveRetryCount"/> by default.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is outside 1 to 127.</exception>
    public int KeepAliveRetryCount
    {
        get => _keepAliveRetryCount;
        set
        {
            ArgumentOutOfRangeException.ThrowIfLessThan(value, 1, nameof(KeepAliveRetryCount));
            ArgumentOutOfRangeException.ThrowIfGreaterThan(value, 127, nameof(KeepAliveRetryCount));
            _keepAliveRetryCount = value;
        }
    }

    /// <summary>Gets or sets the size of each connection's kernel receive buffer (<c>SO_RCVBUF</c>), at least 1;
    /// <see langword="null"/> (the default) for the system's.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is less than 1.</exception>
    public int? ReceiveBufferSize
    {
        get => _receiveBufferSize;
        set => _receiveBufferSize = CheckBufferSize(value, nameof(ReceiveBufferSize));
    }

    /// <summary>Gets or sets the size of each connection's kernel send buffer (<c>SO_SNDBUF</c>), at least 1;
    /// <see langword="null"/> (the default) for the system's.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is less than 1.</exception>
    public int? SendBufferSize
    {
        get => _sendBufferSize;
        set => _sendBufferSize = CheckBufferSize(value, nameof(SendBufferSize));
    }

    private static TimeSpan CheckKeepAlive(TimeSpan value, string property)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(value, TimeSpan.FromSeconds(1), property);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(value, s_longestKeepAlive, property);
        return value;
    }

    private static int? CheckBufferSize(int? value, string property)
    {
        if (value is { } size)
        {
            ArgumentOutOfRangeException.ThrowIfLessThan(size, 1, property);
        }

        return value;
    }
}
