using System.Diagnostics.CodeAnalysis;
using System.Net;

namespace SocketServers;

/// <summary>Settings of a <see cref="TcpServer"/>; the defaults are safe for a public default install.</summary>
/// <remarks>Memory is bounded by <see cref="MaxConnections"/> × 2 × <see cref="BufferSize"/>: one pooled args
/// per connection, a receive buffer while it has input to handle (or part of a message), and a send buffer while it has
/// output to send; plus the budget for messages longer than the buffer (see <see cref="MaxMessageSize"/>). Every setter
/// checks its value. Not thread-safe.</remarks>
[SuppressMessage("ApiDesign", "RS0022", Justification = "SocketServerOptions has no protected members for a subclass to reach.")]
public class TcpServerOptions : SocketServerOptions
{
    /// <summary>The largest accepted <see cref="MaxConnections"/>: 1,000,000.</summary>
    public const int MaxConnectionsLimit = 1_000_000;

    /// <summary>The largest accepted <see cref="BufferSize"/>: 1 MiB.</summary>
    public const int MaxBufferSize = 1024 * 1024;

    /// <summary>The largest accepted <see cref="MaxMessageSize"/>: 1 GiB.</summary>
    public const int MaxMessageSizeLimit = 1 << 30;

    /// <summary>The longest accepted <see cref="IdleTimeout"/>: one day.</summary>
    public static readonly TimeSpan MaxIdleTimeout = TimeSpan.FromDays(1);

    private int _maxConnections = 1000;
    private int _bufferSize = 8192;
    private int _maxMessageSize = 1024 * 1024;
    private TimeSpan _idleTimeout = TimeSpan.FromSeconds(60);
    private int _listenBacklog = 512;
    private int _minDataRate = 1024;
    private TimeSpan _slowConnectionWindow = TimeSpan.FromSeconds(2);
    private int _maxConnectionsPerAddress;
    private TimeSpan _handshakeTimeout = TimeSpan.FromSeconds(10);

    /// <summary>The most connections served at once, 1 to <see cref="MaxConnectionsLimit"/>; 1000 by default.
    /// It is the capacity of the server's args pool; further clients wait in the listen backlog.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxConnections
    {
        get => _maxConnections;
        set => _maxConnections = CheckRange(value, 1, MaxConnectionsLimit);
    }

    /// <summary>The size of a connection's receive buffer and of its send buffer in bytes, 1 to <see cref="MaxBufferSize"/>;
    /// 8192 by default. A receive reads at most this much before it is handled; a longer message grows the buffer up to <see cref="MaxMessageSize"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int BufferSize
    {
        get => _bufferSize;
        set => _bufferSize = CheckRange(value, 1, MaxBufferSize);
    }

    /// <summary>The longest message a connection can receive, in bytes, from <see cref="BufferSize"/> to
    /// <see cref="MaxMessageSizeLimit"/>; 1 MiB by default. A message longer than <see cref="BufferSize"/> (of which the
    /// handler consumes nothing while it fills the buffer) moves into a buffer twice as large, and so on up to this;
    /// grown buffers come from one budget per server, the larger of 2 × this and <see cref="MaxConnections"/> ×
    /// <see cref="BufferSize"/>, and go back as soon as what is pending fits <see cref="BufferSize"/> again. A message
    /// longer than this, or one that finds the budget spent, ends at <see cref="TcpConnectionHandler.OnMessageTooLargeAsync"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range; the server's constructor also refuses
    /// one less than <see cref="BufferSize"/>.</exception>
    public int MaxMessageSize
    {
        get => _maxMessageSize;
        set => _maxMessageSize = CheckRange(value, 1, MaxMessageSizeLimit);
    }

    /// <summary>How long a connection may go without receiving or sending anything, while no handler's call is at work
    /// on it (a call waiting to send to a client that does not read is not), before the server closes it; 60 seconds by default, <see cref="Timeout.InfiniteTimeSpan"/> to never close idle
    /// connections. Checked by one periodic sweep, so a connection closes up to a quarter of the timeout
    /// (at most one second) late.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is not positive (and not infinite) or is
    /// longer than <see cref="MaxIdleTimeout"/>.</exception>
    public TimeSpan IdleTimeout
    {
        get => _idleTimeout;
        set
        {
            if (value != Timeout.InfiniteTimeSpan)
            {
                ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(value, TimeSpan.Zero, nameof(IdleTimeout));
                ArgumentOutOfRangeException.ThrowIfGreaterThan(value, MaxIdleTimeout, nameof(IdleTimeout));
            }

            _idleTimeout = value;
        }
    }

    /// <summary>The data rate, in bytes received and sent per second, that keeps a connection safe from eviction:
    /// while every one of <see cref="MaxConnections"/> is taken and new clients wait in the backlog, the
    /// server closes, every eighth of a <see cref="SlowConnectionWindow"/>, as many connections as clients wait
    /// (on Linux, which counts them; elsewhere one), those quiet longest among the ones that moved less than
    /// this both over their last complete window and since it ended, or, in their first window, since they
    /// opened. So a connection that receives or sends at least this much now (a client streaming a request, or
    /// reading a long reply) is never closed for this, nor one whose handler's call is at work on it. 1024 by default;
    /// 0 never evicts, and nor does <see cref="RejectWhenFull"/>, with which no client waits.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is negative.</exception>
    public int MinDataRate
    {
        get => _minDataRate;
        set => _minDataRate = CheckRange(value, 0, int.MaxValue);
    }

    /// <summary>How long a connection's data rate is averaged over (see <see cref="MinDataRate"/>); a new
    /// connection is judged over its life until its first window ends, from a sixteenth of a window on. 2 seconds by
    /// default, from one millisecond to one hour.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public TimeSpan SlowConnectionWindow
    {
        get => _slowConnectionWindow;
        set
        {
            ArgumentOutOfRangeException.ThrowIfLessThan(value, TimeSpan.FromMilliseconds(1), nameof(SlowConnectionWindow));
            ArgumentOutOfRangeException.ThrowIfGreaterThan(value, TimeSpan.FromHours(1), nameof(SlowConnectionWindow));
            _slowConnectionWindow = value;
        }
    }

    /// <summary>The most connections served at once from one client IP address; a client over it is
    /// accepted and closed at once, and counted as rejected. 0 (the default) for no limit.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is negative.</exception>
    public int MaxConnectionsPerAddress
    {
        get => _maxConnectionsPerAddress;
        set => _maxConnectionsPerAddress = CheckRange(value, 0, MaxConnectionsLimit);
    }

    /// <summary>What happens to clients while <see cref="MaxConnections"/> are open: <see langword="false"/>
    /// (the default), they wait in the listen backlog until a connection ends; <see langword="true"/>, they
    /// are accepted and closed at once, and counted as rejected.</summary>
    public bool RejectWhenFull { get; set; }

    /// <summary>The listen backlog: connections the kernel queues while the server is at
    /// <see cref="MaxConnections"/>; 512 by default, at least 1.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is less than 1.</exception>
    public int ListenBacklog
    {
        get => _listenBacklog;
        set => _listenBacklog = CheckRange(value, 1, int.MaxValue);
    }

    /// <summary>The longest accepted <see cref="HandshakeTimeout"/>: one hour.</summary>
    public static readonly TimeSpan MaxHandshakeTimeout = TimeSpan.FromHours(1);

    /// <summary>How long a new connection has, from its accept, to send its PROXY header (see
    /// <see cref="ProxyProtocolNetworks"/>) and finish its TLS handshake (see <see cref="Tls"/>) before the server closes
    /// it; 10 seconds by default, from one millisecond to <see cref="MaxHandshakeTimeout"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public TimeSpan HandshakeTimeout
    {
        get => _handshakeTimeout;
        set
        {
            ArgumentOutOfRangeException.ThrowIfLessThan(value, TimeSpan.FromMilliseconds(1), nameof(HandshakeTimeout));
            ArgumentOutOfRangeException.ThrowIfGreaterThan(value, MaxHandshakeTimeout, nameof(HandshakeTimeout));
            _handshakeTimeout = value;
        }
    }

    /// <summary>Gets the networks of trusted proxies (nginx, HAProxy, a load balancer) whose connections start with a PROXY
    /// protocol header, v1 or v2; empty (the default) for none. A connection from one of them is closed unless its header
    /// arrives within <see cref="HandshakeTimeout"/> and is well-formed; the header's address is then the client's, for
    /// <see cref="TcpConnection.RemoteEndPoint"/>, <see cref="MaxConnectionsPerAddress"/>, logs and metrics. A connection
    /// from elsewhere is a direct client: its bytes are never read as a header.</summary>
    public IList<IPNetwork> ProxyProtocolNetworks { get; } = new List<IPNetwork>();

    /// <summary>Gets the TLS settings; TLS is off until a certificate is set (<see cref="TlsOptions.IsEnabled"/>).
    /// The handshake comes after any PROXY header, and holds a connection's place among <see cref="MaxConnections"/>.</summary>
    public TlsOptions Tls { get; } = new();
}
