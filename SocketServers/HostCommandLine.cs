using System.CommandLine;
using System.CommandLine.Parsing;
using System.Globalization;
using System.Net;

namespace SocketServers;

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
        "Runs RFC 862 echo servers on pooled SocketAsyncEventArgs until Ctrl+C or SIGTERM. Settings also come from "
        + "appsettings.json beside the program and from environment variables (SocketServers__Tcp__Port=9000); an option "
        + "given here wins over both, and the defaults shown are the built-in ones.");

    // Each symbol, and the configuration values it sets when given.
    private readonly List<(Symbol Symbol, Func<ParseResult, IEnumerable<(string Key, string Value)>> Settings)> _settings = [];

    /// <summary>Defines the command line.</summary>
    public HostCommandLine()
    {
        var servers = new Argument<string>("servers")
        {
            Description = "Which servers to run, on the same port number",
            HelpName = "tcp|udp|both",
            Arity = ArgumentArity.ZeroOrOne,
            DefaultValueFactory = _ => "both",
            CustomParser = result =>
            {
                // An unknown option lands here too, as the one argument there is room for.
                string value = result.Tokens[0].Value;
                if (value is not ("tcp" or "udp" or "both"))
                {
                    result.AddError(value.StartsWith('-') ? $"unknown option '{value}'." : $"unexpected argument '{value}': the servers are tcp, udp or both.");
                }

                return value;
            },
        };
        _command.Add(servers);
        _settings.Add((servers, result => [(HostSettings.ServersKey, result.GetValue(servers)!)]));

        var address = new Option<IPAddress>("--address")
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
        Add(address, value => [(Tcp + "Address", value!.ToString()), (Udp + "Address", value!.ToString())]);

        Option<int> port = WholeNumber("--port", 0, IPEndPoint.MaxPort, EchoServerOptions.DefaultPort, "N", "The port, 0 picks a free one");
        Add(port, value => [(Tcp + "Port", Text(value)), (Udp + "Port", Text(value))]);

        Option<int> maxConnections = WholeNumber(
            "--max-connections", 1, TcpEchoServerOptions.MaxConnectionsLimit, 1000, "N", "TCP connections served at once");
        Add(maxConnections, value => [(Tcp + "MaxConnections", Text(value))]);

        Option<int> bufferSize = WholeNumber(
            "--buffer-size", 1, TcpEchoServerOptions.MaxBufferSize, 8192, "N", "TCP buffer per connection and largest UDP datagram, in bytes");
        Add(bufferSize, value =>
            [(Tcp + "BufferSize", Text(value)), (Udp + "MaxDatagramSize", Text(Math.Min(value, UdpEchoServerOptions.MaxDatagramSizeLimit)))]);

        var idleTimeout = new Option<double>("--idle-timeout")
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
        Add(idleTimeout, seconds =>
            [(Tcp + "IdleTimeout", (seconds == 0 ? Timeout.InfiniteTimeSpan : TimeSpan.FromSeconds(seconds)).ToString("c", CultureInfo.InvariantCulture))]);

        Option<int> minDataRate = WholeNumber(
            "--min-data-rate",
            0,
            int.MaxValue,
            1024,
            "BYTES",
            "When full with a client waiting, evict the quietest TCP connection that received less than this per second; 0 never");
        Add(minDataRate, value => [(Tcp + "MinDataRate", Text(value))]);

        Option<int> maxPerAddress = WholeNumber(
            "--max-connections-per-address", 0, TcpEchoServerOptions.MaxConnectionsLimit, 0, "N", "TCP connections served at once from one client address; 0 no limit");
        Add(maxPerAddress, value => [(Tcp + "MaxConnectionsPerAddress", Text(value))]);

        Option<string> whenFull = OneOf(
            "--when-full", "queue", "TCP clients over --max-connections wait in the backlog, or are accepted and closed at once", "queue", "reject");
        Add(whenFull, value => [(Tcp + "RejectWhenFull", value == "reject" ? "true" : "false")]);

        Option<int> stats = WholeNumber("--stats", 0, HostSettings.MaxStatsSeconds, 0, "SECONDS", "Print the metrics every this many seconds; 0 only on SIGUSR1");
        Add(stats, value => [(HostSettings.StatsSecondsKey, Text(value))]);

        Option<string> udpProcessing = OneOf(
            "--udp-processing",
            "threads",
            "threads: receive threads that reply themselves; block: asynchronous receives and a Dataflow reply block",
            "threads",
            "block");
        Add(udpProcessing, value => [(Udp + "Processing", value == "block" ? nameof(UdpProcessing.ReplyBlock) : nameof(UdpProcessing.ReceiveThreads))]);

        Option<int> udpReceives = WholeNumber(
            "--udp-receives",
            0,
            UdpEchoServerOptions.MaxConcurrentReceives,
            0,
            "N",
            $"UDP receive threads, or outstanding receives with block; 0 one per core but one (block: per two cores), 1 to {UdpEchoServerOptions.MaxAutomaticConcurrentReceives}");
        Add(udpReceives, value => [(Udp + "ConcurrentReceives", Text(value))]);

        Option<int> udpReplyLimit = WholeNumber(
            "--udp-max-replies-per-endpoint", 0, int.MaxValue, 0, "N", "UDP datagrams answered to one sender address and port a second; more are dropped; 0 no limit");
        Add(udpReplyLimit, value => [(Udp + "MaxRepliesPerEndpointPerSecond", Text(value))]);

        var reusePort = new Option<bool>("--reuse-port")
        {
            Description = "Let several processes serve the same TCP and UDP port, the kernel spreading clients across them (Linux; every process needs it)",
        };
        Add(reusePort, value => [(Tcp + "ReusePort", Text(value)), (Udp + "ReusePort", Text(value))]);

        var allowPrivilegedPorts = new Option<bool>("--udp-allow-privileged-ports")
        {
            Description = "Also echo UDP datagrams from source ports below 1024, dropped by default: a reply to another echo or chargen service can loop without end",
        };
        Add(allowPrivilegedPorts, value => [(Udp + "AllowPrivilegedSourcePorts", Text(value))]);
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
        foreach ((Symbol symbol, Func<ParseResult, IEnumerable<(string Key, string Value)>> settings) in _settings)
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

    private void Add<T>(Option<T> option, Func<T, IEnumerable<(string Key, string Value)>> settings)
    {
        _command.Add(option);
        _settings.Add((option, result => settings(result.GetValue(option)!)));
    }
}
