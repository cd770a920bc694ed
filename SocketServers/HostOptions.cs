using System.Diagnostics.CodeAnalysis;
using System.Globalization;
using System.Net;

namespace SocketServers;

/// <summary>The console host's command line: which servers to run and their settings.</summary>
/// <remarks>Parsed by <see cref="TryParse"/>, which never throws on bad input and reports one message
/// instead. Immutable once parsed.</remarks>
public sealed class HostOptions
{
    /// <summary>The text <c>--help</c> prints.</summary>
    public const string Usage = """
        Usage: SocketServers [tcp|udp|both] [options]

        Runs RFC 862 echo servers on pooled SocketAsyncEventArgs until Ctrl+C or SIGTERM.

          tcp | udp | both          which servers to run (default: both, on the same port number)
          --address A               local IP address to bind (default: 127.0.0.1)
          --port N                  port, 0 to 65535; 0 picks a free one (default: 7007)
          --max-connections N       TCP connections served at once (default: 1000)
          --buffer-size N           TCP buffer per connection and largest UDP datagram, in bytes (default: 8192)
          --idle-timeout SECONDS    close TCP connections idle this long; 0 never (default: 60)
          --min-data-rate BYTES     when full with a client waiting, evict the quietest TCP connection that
                                    received less than this per second; 0 never (default: 1024)
          --max-connections-per-address N
                                    TCP connections served at once from one client address; 0 no limit (default: 0)
          --when-full queue|reject  TCP clients over --max-connections wait in the backlog, or are accepted
                                    and closed at once (default: queue)
          --stats SECONDS           print the metrics every this many seconds; 0 only on SIGUSR1 (default: 0)
          --udp-processing P        threads: receive threads that reply themselves; block: asynchronous
                                    receives and a Dataflow reply block (default: threads)
          --udp-receives N          UDP receive threads, or outstanding receives with block, 1 to 256 (default: 1)
          --reuse-port              let several processes serve the same TCP and UDP port, the kernel spreading
                                    clients across them (Linux; every process needs it)
          --udp-allow-privileged-ports
                                    also echo UDP datagrams from source ports below 1024, which are dropped by
                                    default: a reply to another echo or chargen service can loop without end
          --help                    show this text

        """;

    private const double MaxIdleTimeoutSeconds = 86_400;

    private HostOptions()
    {
    }

    /// <summary>Whether to run the TCP echo server.</summary>
    public bool RunTcp { get; private set; } = true;

    /// <summary>Whether to run the UDP echo server.</summary>
    public bool RunUdp { get; private set; } = true;

    /// <summary>The local address both servers bind.</summary>
    public IPAddress Address { get; private set; } = IPAddress.Loopback;

    /// <summary>The port both servers bind (TCP and UDP ports are separate spaces).</summary>
    public int Port { get; private set; } = EchoServerOptions.DefaultPort;

    /// <summary>The TCP connection limit.</summary>
    public int MaxConnections { get; private set; } = 1000;

    /// <summary>The TCP buffer per connection and the largest UDP datagram (capped at
    /// <see cref="UdpEchoServerOptions.MaxDatagramSizeLimit"/>), in bytes.</summary>
    public int BufferSize { get; private set; } = 8192;

    /// <summary>The TCP idle timeout; <see cref="Timeout.InfiniteTimeSpan"/> for none.</summary>
    public TimeSpan IdleTimeout { get; private set; } = TimeSpan.FromSeconds(60);

    /// <summary>The data rate below which a TCP connection may be evicted for a waiting client (<c>--min-data-rate</c>).</summary>
    public int MinDataRate { get; private set; } = 1024;

    /// <summary>The TCP connection limit per client address; 0 for none (<c>--max-connections-per-address</c>).</summary>
    public int MaxConnectionsPerAddress { get; private set; }

    /// <summary>Whether TCP clients over the connection limit are closed at once (<c>--when-full reject</c>).</summary>
    public bool RejectWhenFull { get; private set; }

    /// <summary>How often the host prints the metrics; <see langword="null"/> for only on SIGUSR1 (<c>--stats</c>).</summary>
    public TimeSpan? StatsInterval { get; private set; }

    /// <summary>How the UDP server processes datagrams (<c>--udp-processing threads|block</c>).</summary>
    public UdpProcessing UdpProcessing { get; private set; } = UdpProcessing.ReceiveThreads;

    /// <summary>UDP receive threads, or outstanding receives with <see cref="UdpProcessing.ReplyBlock"/>
    /// (<c>--udp-receives</c>).</summary>
    public int UdpReceives { get; private set; } = 1;

    /// <summary>Whether the UDP server echoes datagrams from source ports below 1024
    /// (<c>--udp-allow-privileged-ports</c>); see <see cref="UdpEchoServerOptions.AllowPrivilegedSourcePorts"/>.</summary>
    public bool UdpAllowPrivilegedPorts { get; private set; }

    /// <summary>Whether other processes may serve the same port (<c>--reuse-port</c>); see <see cref="EchoServerOptions.ReusePort"/>.</summary>
    public bool ReusePort { get; private set; }

    /// <summary>Whether <c>--help</c> was given; the host then prints <see cref="Usage"/> and runs nothing.</summary>
    public bool ShowHelp { get; private set; }

    /// <summary>Parses the host's command line.</summary>
    /// <param name="args">The arguments, without the program name.</param>
    /// <param name="options">The parsed options when the result is <see langword="true"/>.</param>
    /// <param name="error">One line saying what is wrong when the result is <see langword="false"/>.</param>
    /// <returns>Whether <paramref name="args"/> is a valid command line.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="args"/> is <see langword="null"/>.</exception>
    public static bool TryParse(
        IReadOnlyList<string> args,
        [NotNullWhen(true)] out HostOptions? options,
        [NotNullWhen(false)] out string? error)
    {
        ArgumentNullException.ThrowIfNull(args);
        var parsed = new HostOptions();
        bool modeSeen = false;
        options = null;
        for (int i = 0; i < args.Count; i++)
        {
            string arg = args[i];
            string name = arg;
            string? value = null;
            int equals = arg.IndexOf('=', StringComparison.Ordinal);
            if (arg.StartsWith("--", StringComparison.Ordinal) && equals > 0)
            {
                name = arg[..equals];
                value = arg[(equals + 1)..];
            }

            switch (name)
            {
                case "--help" or "-h" or "-?":
                    parsed.ShowHelp = true;
                    continue;
                case "tcp" or "udp" or "both":
                    if (modeSeen)
                    {
                        error = $"'{arg}': the server choice (tcp, udp or both) was already given.";
                        return false;
                    }

                    modeSeen = true;
                    parsed.RunTcp = name != "udp";
                    parsed.RunUdp = name != "tcp";
                    continue;
                case "--udp-allow-privileged-ports" or "--reuse-port":
                    if (value is not null)
                    {
                        error = $"'{name}' takes no value, not '{value}'.";
                        return false;
                    }

                    if (name == "--reuse-port")
                    {
                        parsed.ReusePort = true;
                    }
                    else
                    {
                        parsed.UdpAllowPrivilegedPorts = true;
                    }

                    continue;
                case "--address" or "--port" or "--max-connections" or "--buffer-size" or "--idle-timeout" or "--udp-processing" or "--udp-receives"
                    or "--min-data-rate" or "--max-connections-per-address" or "--when-full" or "--stats":
                    if (value is null)
                    {
                        if (i + 1 >= args.Count)
                        {
                            error = $"'{name}' needs a value.";
                            return false;
                        }

                        value = args[++i];
                    }

                    error = parsed.SetValue(name, value);
                    if (error is not null)
                    {
                        return false;
                    }

                    continue;
                default:
                    error = arg.StartsWith('-') ? $"unknown option '{arg}'." : $"unexpected argument '{arg}'.";
                    return false;
            }
        }

        options = parsed;
        error = null;
        return true;
    }

    /// <summary>The TCP server's settings from these options.</summary>
    /// <returns>A new options object.</returns>
    public TcpEchoServerOptions CreateTcpOptions() => new()
    {
        Address = Address,
        Port = Port,
        MaxConnections = MaxConnections,
        BufferSize = BufferSize,
        IdleTimeout = IdleTimeout,
        MinDataRate = MinDataRate,
        MaxConnectionsPerAddress = MaxConnectionsPerAddress,
        RejectWhenFull = RejectWhenFull,
        ReusePort = ReusePort,
    };

    /// <summary>The UDP server's settings from these options.</summary>
    /// <returns>A new options object.</returns>
    public UdpEchoServerOptions CreateUdpOptions() => new()
    {
        Address = Address,
        Port = Port,
        MaxDatagramSize = Math.Min(BufferSize, UdpEchoServerOptions.MaxDatagramSizeLimit),
        Processing = UdpProcessing,
        ConcurrentReceives = UdpReceives,
        AllowPrivilegedSourcePorts = UdpAllowPrivilegedPorts,
        ReusePort = ReusePort,
    };

    /// <returns>null when <paramref name="value"/> is a whole number from min to max, now stored, else the error line.</returns>
    private static string? SetInt(string name, string value, int min, int max, Action<int> store)
    {
        if (!int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int number) || number < min || number > max)
        {
            return $"'{name}' expects a whole number from {min} to {max}, not '{value}'.";
        }

        store(number);
        return null;
    }

    /// <returns>null when the value is valid and stored, else the error line.</returns>
    private string? SetValue(string name, string value)
    {
        switch (name)
        {
            case "--address":
                if (!IPAddress.TryParse(value, out IPAddress? address))
                {
                    return $"'--address' expects an IP address such as 127.0.0.1 or ::1, not '{value}'.";
                }

                Address = address;
                return null;
            case "--port":
                return SetInt(name, value, 0, IPEndPoint.MaxPort, port => Port = port);
            case "--max-connections":
                return SetInt(name, value, 1, TcpEchoServerOptions.MaxConnectionsLimit, limit => MaxConnections = limit);
            case "--buffer-size":
                return SetInt(name, value, 1, TcpEchoServerOptions.MaxBufferSize, size => BufferSize = size);
            case "--min-data-rate":
                return SetInt(name, value, 0, int.MaxValue, rate => MinDataRate = rate);
            case "--max-connections-per-address":
                return SetInt(name, value, 0, TcpEchoServerOptions.MaxConnectionsLimit, limit => MaxConnectionsPerAddress = limit);
            case "--when-full":
                switch (value)
                {
                    case "queue":
                        RejectWhenFull = false;
                        return null;
                    case "reject":
                        RejectWhenFull = true;
                        return null;
                    default:
                        return $"'--when-full' expects queue or reject, not '{value}'.";
                }

            case "--stats":
                return SetInt(name, value, 0, 86_400, seconds => StatsInterval = seconds == 0 ? null : TimeSpan.FromSeconds(seconds));
            case "--udp-receives":
                return SetInt(name, value, 1, UdpEchoServerOptions.MaxConcurrentReceives, receives => UdpReceives = receives);
            case "--udp-processing":
                switch (value)
                {
                    case "threads":
                        UdpProcessing = UdpProcessing.ReceiveThreads;
                        return null;
                    case "block":
                        UdpProcessing = UdpProcessing.ReplyBlock;
                        return null;
                    default:
                        return $"'--udp-processing' expects threads or block, not '{value}'.";
                }
            default:
                if (!double.TryParse(value, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out double seconds)
                    || !(seconds == 0 || (seconds >= 0.001 && seconds <= MaxIdleTimeoutSeconds)))
                {
                    return $"'--idle-timeout' expects seconds from 0 to {MaxIdleTimeoutSeconds} (0 = never), not '{value}'.";
                }

                IdleTimeout = seconds == 0 ? Timeout.InfiniteTimeSpan : TimeSpan.FromSeconds(seconds);
                return null;
        }
    }
}
