using System.Net;
using System.Runtime.CompilerServices;

namespace SocketServers;

/// <summary>Settings shared by every <see cref="TcpServer"/> and <see cref="UdpServer"/>.</summary>
/// <remarks>
/// Every setter checks its value, so an options object is always valid. A server copies the values when
/// it is constructed; changing the options afterwards does not affect it. Not thread-safe.
/// </remarks>
public abstract class SocketServerOptions
{
    /// <summary>The port the console host uses when none is given: 7007 (RFC 862 uses 7, a privileged port).</summary>
    public const int DefaultPort = 7007;

    private IPAddress _address = IPAddress.Loopback;
    private int _port = DefaultPort;
    private TimeSpan _stopGracePeriod = TimeSpan.FromSeconds(5);

    private protected SocketServerOptions()
    {
    }

    /// <summary>The local address to bind; <see cref="IPAddress.Loopback"/> (127.0.0.1) by default.</summary>
    /// <exception cref="ArgumentNullException">The value is <see langword="null"/>.</exception>
    public IPAddress Address
    {
        get => _address;
        set
        {
            ArgumentNullException.ThrowIfNull(value, nameof(Address));
            _address = value;
        }
    }

    /// <summary>The local port to bind, 0 to 65535; 0 lets the system choose (read it back from
    /// <see cref="SocketServer.LocalEndPoint"/>). <see cref="DefaultPort"/> by default.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is outside 0 to 65535.</exception>
    public int Port
    {
        get => _port;
        set => _port = CheckRange(value, 0, IPEndPoint.MaxPort);
    }

    /// <summary>Whether other processes (and servers) may bind the same address and port, each also with
    /// this set, and have the kernel spread connections and datagrams across them (SO_REUSEPORT, Linux
    /// only); <see langword="false"/> by default, when a port in use is an error.</summary>
    /// <remarks>Where the platform lacks it, starting the server throws <see cref="PlatformNotSupportedException"/>.</remarks>
    public bool ReusePort { get; set; }

    /// <summary>How long <see cref="SocketServer.StopAsync"/> lets in-flight replies finish, and TCP clients close
    /// after the end of the stream, before it closes what is left; 5 seconds by default. Zero closes everything
    /// at once.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is negative or longer than a day.</exception>
    public TimeSpan StopGracePeriod
    {
        get => _stopGracePeriod;
        set
        {
            ArgumentOutOfRangeException.ThrowIfLessThan(value, TimeSpan.Zero, nameof(StopGracePeriod));
            ArgumentOutOfRangeException.ThrowIfGreaterThan(value, TimeSpan.FromDays(1), nameof(StopGracePeriod));
            _stopGracePeriod = value;
        }
    }

    internal IPEndPoint EndPoint => new(Address, Port);

    /// <summary>A setter's range check; the exception names the property.</summary>
    /// <returns><paramref name="value"/>, when it is within <paramref name="min"/> to <paramref name="max"/>.</returns>
    private protected static int CheckRange(int value, int min, int max, [CallerMemberName] string property = "")
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(value, min, property);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(value, max, property);
        return value;
    }
}
