using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using System.Net;

namespace SocketServers.Host;

/// <summary>
/// The console host's command line, parsed by System.CommandLine. Each option given becomes a configuration value
/// under <see cref="HostSettings.Section"/>, so it overrides appsettings.json and the environment; an option not
/// given leaves them be.
/// </summary>
/// <remarks>Values are checked while parsing, each with a one-line error that names the option.</remarks>
internal sealed class HostCommandLine
{
    private const string Tcp = HostSettings.TcpSection + ":";
    private const string Udp = HostSettings.UdpSection + ":";
    private const double MaxIdleTimeoutSeconds = 86_400;

    private readonly RootCommand _command = new(
        "Runs RFC 862 echo servers (or the Redis-protocol sample) on pooled SocketAsyncEventArgs until Ctrl+C or SIGTERM. Settings also come from "
        + "appsettings.json beside the program and from environment variables (SocketServers__Tcp__Port=9000); an option "
        + "given here wins over both, and the defaults shown are the built-in ones.");

    // The table, in the order --help lists it.
    private readonly TableRow[] _rows = Rows();

    /// <summary>Defines the command line: every row of the table, in order.</summary>
    public HostCommandLine()
    {
        foreach (TableRow row in _rows)
        {
            switch (row.Symbol)
            {
                case Argument argument:
                    _command.Add(argument);
                    break;
                case Option option:
                    _command.Add(option);
                    break;
            }
        }
    }

    /// <summary>Parses a command line; <see cref="ParseResult.Errors"/> holds what is wrong with it, and
    /// <see cref="ParseResult.Action"/> is set for <c>--help</c> and <c>--version</c>, which run nothing else.</summary>
    /// <param name="args">The arguments, without the program name.</param>
    /// <returns>The parse result.</returns>
    public ParseResult Parse(IReadOnlyList<string> args) => _command.Parse(args);

    /// <summary>The configuration values of the arguments and options given on a valid command line.</summary>
    /// <param name="result">A parse result without errors.</param>
    /// <returns>Pairs of a configuration key and its value.</returns>
    public IEnumerable<KeyValuePair<string, string?>> ToConfiguration(ParseResult result)
    {
        foreach ((Symbol symbol, Func<ParseResult, IEnumerable<(string Key, string Value)>> settings) in _rows)
        {
            SymbolResult? given = symbol switch
            {
                Option option => result.GetResult(option) is { Implicit: false } optionResult ? optionResult : null,
                Argument argument => result.GetResult(argument) is { Implicit: false } argumentResult ? argumentResult : null,
                _ => null,
            };
            if (given is not null)
            {
                foreach ((string key, string value) in settings(result))
                {
                    yield return KeyValuePair.Create(key, (string?)value);
                }
            }
        }
    }

    /// <summary>The table of the command line: each row an argument or option (its name, help text and how a value
    /// is read) and the configuration values it sets when given.</summary>
    private static TableRow[] Rows() =>
    [
        Row(ServersArgument(), value => [(HostSettings.ServersKey, value)]),
        Row(AddressOption(), value => [(Tcp + "Address", value!.ToString()), (Udp + "Address", value!.ToString())]),
        Row(
            WholeNumber("--port", 0, IPEndPoint.MaxPort, SocketServerOptions.DefaultPort, "N", "The port; TCP and UDP bind the same number, and 0 picks a free one for each"),
            value => [(Tcp + "Port", Text(value)), (Udp + "Port", Text(value))]),
        Row(
            WholeNumber("--max-connections", 1, TcpEchoServerOptions.MaxConnectionsLimit, 1000, "N", "TCP connections served at once"),
            value => [(Tcp + "MaxConnections", Text(value))]),
        Row(
            WholeNumber("--buffer-size", 1, TcpEchoServerOptions.MaxBufferSize, 8192, "N", "TCP buffer per connection and largest UDP datagram, in bytes"),
            value => [(Tcp + "BufferSize", Text(value)), (Udp + "MaxDatagramSize", Text(Math.Min(value, UdpEchoServerOptions.MaxDatagramSizeLimit)))]),
        Row(
            WholeNumber("--max-message-size", 1, TcpEchoServerOptions.MaxMessageSizeLimit, 1024 * 1024, "BYTES", "Longest TCP message; the receive grows past --buffer-size up to it"),
            value => [(Tcp + "MaxMessageSize", Text(value))]),
        Row(
            IdleTimeoutOption(),
            seconds => [(Tcp + "IdleTimeout", (seconds == 0 ? Timeout.InfiniteTimeSpan : TimeSpan.FromSeconds(seconds)).ToString("c", CultureInfo.InvariantCulture))]),
        Row(
            WholeNumber("--min-data-rate", 0, int.MaxValue, 1024, "BYTES", "When full with a client waiting, evict the quietest TCP connection that received less than this per second; 0 never"),
            value => [(Tcp + "MinDataRate", Text(value))]),
        Row(
            WholeNumber("--max-connections-per-address", 0, TcpEchoServerOptions.MaxConnectionsLimit, 0, "N", "TCP connections served at once from one client address; 0 no limit"),
            value => [(Tcp + "MaxConnectionsPerAddress", Text(value))]),
        Row(
            OneOf("--when-full", "queue", "TCP clients over --max-connections wait in the backlog, or are accepted and closed at once", "queue", "reject"),
            value => [(Tcp + "RejectWhenFull", value == "reject" ? "true" : "false")]),
        Row(MaxMemoryOption(), value => [(HostSettings.RespMaxMemoryKey, value.ToString(CultureInfo.InvariantCulture))]),
        .. ProxyAndTlsRows(),
        Row(
            WholeNumber("--stats", 0, HostSettings.MaxStatsSeconds, 0, "SECONDS", "Print the metrics every this many seconds; 0 only on SIGUSR1"),
            value => [(HostSettings.StatsSecondsKey, Text(value))]),
        Row(
            OneOf("--udp-processing", "threads", "threads: receive threads that reply themselves; block: asynchronous receives and a Dataflow reply block", "threads", "block"),
            value => [(Udp + "Processing", value == "block" ? nameof(UdpProcessing.ReplyBlock) : nameof(UdpProcessing.ReceiveThreads))]),
        Row(
            WholeNumber(
                "--udp-receives",
                0,
                UdpEchoServerOptions.MaxConcurrentReceives,
                0,
                "N",
                $"UDP receive threads, 1 to {UdpEchoServerOptions.MaxConcurrentReceives}; 0 one per core but one (block: one per two cores), from 1 to {UdpEchoServerOptions.MaxAutomaticConcurrentReceives}; with --reuse-port each has a socket, and block receives once per socket"),
            value => [(Udp + "ConcurrentReceives", Text(value))]),
        Row(
            WholeNumber("--udp-receive-buffer", 0, UdpEchoServerOptions.MaxReceiveBufferSize, 0, "BYTES", "UDP: the kernel receive buffer each socket asks for, where bursts wait; 0 the system's"),
            value => [(Udp + "ReceiveBufferSize", Text(value))]),
        Row(
            WholeNumber("--udp-max-replies-per-endpoint", 0, int.MaxValue, 0, "N", "UDP datagrams answered to one sender address and port a second; more are dropped; 0 no limit"),
            value => [(Udp + "MaxRepliesPerEndpointPerSecond", Text(value))]),
        Row(
            Flag("--reuse-port", "Let several processes serve the same TCP and UDP port, the kernel spreading clients across them (Linux; every process needs it)"),
            value => [(Tcp + "ReusePort", Text(value)), (Udp + "ReusePort", Text(value))]),
        Row(
            Flag("--udp-allow-privileged-ports", "Also echo UDP datagrams from source ports below 1024, dropped by default: a reply to another echo or chargen service can loop without end"),
            value => [(Udp + "AllowPrivilegedSourcePorts", Text(value))]),
    ];

    /// <summary>The rows of what comes before a TCP connection starts: the PROXY header and the TLS handshake.</summary>
    private static TableRow[] ProxyAndTlsRows() =>
    [
        Row(ProxyProtocolOption(), value => [(Tcp + nameof(TcpServerOptions.ProxyProtocolNetworks), value!)]),
        Row(
            FilePath("--tls-cert", "Serve TCP over TLS with this certificate: a PEM file (the certificate, then its chain) or a PKCS#12 .pfx without a password; reloaded when it changes"),
            value => [(Tcp + "Tls:" + nameof(TlsOptions.CertificatePath), value)]),
        Row(
            FilePath("--tls-key", "The PEM file of --tls-cert's private key; not needed for a .pfx, or when the key is in the certificate's file"),
            value => [(Tcp + "Tls:" + nameof(TlsOptions.KeyPath), value)]),
        Row(
            HandshakeTimeoutOption(),
            seconds => [(Tcp + nameof(TcpServerOptions.HandshakeTimeout), TimeSpan.FromSeconds(seconds).ToString("c", CultureInfo.InvariantCulture))]),
    ];

    /// <summary>A row for <paramref name="option"/>, whose value <paramref name="settings"/> turns into configuration values.</summary>
    private static TableRow Row<T>(Option<T> option, Func<T, IEnumerable<(string Key, string Value)>> settings)
        => new(option, result => settings(result.GetValue(option)!));

    /// <summary>A row for <paramref name="argument"/>, whose value <paramref name="settings"/> turns into configuration values.</summary>
    private static TableRow Row<T>(Argument<T> argument, Func<T, IEnumerable<(string Key, string Value)>> settings)
        => new(argument, result => settings(result.GetValue(argument)!));

    /// <summary>The one argument: which servers run.</summary>
    private static Argument<string> ServersArgument() => new("servers")
    {
        Description = "Which servers to run, on the same port number; resp runs the Redis-protocol (RESP2) sample over TCP, with the TCP options",
        HelpName = "tcp|udp|both|resp",
        Arity = ArgumentArity.ZeroOrOne,
        DefaultValueFactory = _ => "both",
        CustomParser = result =>
        {
            // An unknown option lands here too, as the one argument there is room for.
            string value = result.Tokens[0].Value;
            if (value is not ("tcp" or "udp" or "both" or "resp"))
            {
                result.AddError(value.StartsWith('-') ? $"unknown option '{value}'." : $"unexpected argument '{value}': the servers are tcp, udp or both, or resp.");
            }

            return value;
        },
    };

    private static Option<IPAddress> AddressOption() => new("--address")
    {
        Description = "The local IP address to bind; :: serves IPv4 and IPv6",
        HelpName = "A",
        DefaultValueFactory = _ => IPAddress.Loopback,
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            if (IPAddress.TryParse(value, out IPAddress? parsed))
            {
                return parsed;
            }

            result.AddError($"'--address' expects an IP address such as 127.0.0.1 or ::1, not '{value}'.");
            return null;
        },
    };

    private static Option<long> MaxMemoryOption() => new("--maxmemory")
    {
        Description = "resp: the most bytes of keys and values, by the store's accounting; a SET or INCR that would pass it gets Redis's OOM error (noeviction); 0 no limit",
        HelpName = "BYTES",
        DefaultValueFactory = _ => 0,
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            if (long.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out long bytes))
            {
                return bytes;
            }

            result.AddError($"'--maxmemory' expects a whole number of bytes, 0 for no limit, not '{value}'.");
            return 0;
        },
    };

    private static Option<double> IdleTimeoutOption() => new("--idle-timeout")
    {
        Description = "Close TCP connections idle this long; 0 never",
        HelpName = "SECONDS",
        DefaultValueFactory = _ => 60,
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            if (double.TryParse(value, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out double seconds)
                && (seconds == 0 || (seconds >= 0.001 && seconds <= MaxIdleTimeoutSeconds)))
            {
                return seconds;
            }

            result.AddError($"'--idle-timeout' expects 0 (never) or seconds from 0.001 to {MaxIdleTimeoutSeconds}, not '{value}'.");
            return 0;
        },
    };

    private static Option<string> ProxyProtocolOption() => new("--proxy-protocol")
    {
        Description = "TCP connections from these networks (trusted proxies) must start with a PROXY protocol header, v1 or v2, whose address is then the client's",
        HelpName = "CIDR[,CIDR...]",
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            foreach (string block in value.Split(','))
            {
                if (!IPNetwork.TryParse(block, out _))
                {
                    result.AddError($"'--proxy-protocol' expects networks in CIDR notation such as 10.0.0.0/8 or fd00::/8, separated by commas, not '{block}'.");
                }
            }

            return value;
        },
    };

    private static Option<double> HandshakeTimeoutOption() => new("--tls-handshake-timeout")
    {
        Description = "Close a TCP connection that has not sent its PROXY header and finished its TLS handshake this long after it was accepted",
        HelpName = "SECONDS",
        DefaultValueFactory = _ => 10,
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            double max = TcpServerOptions.MaxHandshakeTimeout.TotalSeconds;
            if (double.TryParse(value, NumberStyles.AllowDecimalPoint, CultureInfo.InvariantCulture, out double seconds) && seconds >= 0.001 && seconds <= max)
            {
                return seconds;
            }

            result.AddError($"'--tls-handshake-timeout' expects seconds from 0.001 to {max}, not '{value}'.");
            return 10;
        },
    };

    /// <summary>An option taking a file's path; the file is read, and any error reported, when the server starts.</summary>
    private static Option<string> FilePath(string name, string description) => new(name) { Description = description, HelpName = "FILE" };

    private static string Text(int value) => value.ToString(CultureInfo.InvariantCulture);

    private static string Text(bool value) => value ? "true" : "false";

    /// <summary>An option taking a whole number from <paramref name="min"/> to <paramref name="max"/>.</summary>
    private static Option<int> WholeNumber(string name, int min, int max, int defaultValue, string helpName, string description) => new(name)
    {
        Description = description,
        HelpName = helpName,
        DefaultValueFactory = _ => defaultValue,
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            if (int.TryParse(value, NumberStyles.None, CultureInfo.InvariantCulture, out int number) && number >= min && number <= max)
            {
                return number;
            }

            result.AddError($"'{name}' expects a whole number from {min} to {max}, not '{value}'.");
            return defaultValue;
        },
    };

    /// <summary>An option taking one of two words.</summary>
    private static Option<string> OneOf(string name, string defaultValue, string description, string first, string second) => new(name)
    {
        Description = description,
        HelpName = $"{first}|{second}",
        DefaultValueFactory = _ => defaultValue,
        CustomParser = result =>
        {
            string value = result.Tokens[0].Value;
            if (value != first && value != second)
            {
                result.AddError($"'{name}' expects {first} or {second}, not '{value}'.");
            }

            return value;
        },
    };

    /// <summary>An option that is on when given.</summary>
    private static Option<bool> Flag(string name, string description) => new(name) { Description = description };

    /// <summary>One row of the table: an argument or option, and the configuration values it sets when given.</summary>
    /// <param name="Symbol">The argument or option.</param>
    /// <param name="Settings">Its configuration values, read from a parse result where it was given.</param>
    private sealed record TableRow(Symbol Symbol, Func<ParseResult, IEnumerable<(string Key, string Value)>> Settings);
}
