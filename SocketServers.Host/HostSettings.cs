using System.Globalization;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Options;

namespace SocketServers.Host;

/// <summary>
/// The console host's configuration: which servers run and how often the metrics are printed, from the
/// <c>SocketServers</c> section, whose <c>Tcp</c> and <c>Udp</c> sections hold the servers' options.
/// </summary>
/// <param name="RunTcp">Whether a TCP server runs: the echo server, or with <paramref name="Resp"/> the RESP sample.</param>
/// <param name="RunUdp">Whether the UDP echo server runs.</param>
/// <param name="StatsInterval">How often the metrics are printed; <see langword="null"/> for only on SIGUSR1.</param>
/// <param name="Resp">Whether the TCP server is the Redis-protocol sample rather than echo.</param>
/// <param name="RespMaxMemory">The RESP sample's memory limit in bytes, by its store's accounting; 0 for none.</param>
internal sealed record HostSettings(bool RunTcp, bool RunUdp, TimeSpan? StatsInterval, bool Resp = false, long RespMaxMemory = 0)
{
    /// <summary>The section of everything the host reads.</summary>
    public const string Section = "SocketServers";

    /// <summary><c>tcp</c>, <c>udp</c> or <c>both</c> (the default).</summary>
    public const string ServersKey = Section + ":Servers";

    /// <summary>Seconds between metric printouts, 0 (the default) to 86,400; 0 prints only on SIGUSR1.</summary>
    public const string StatsSecondsKey = Section + ":StatsSeconds";

    /// <summary>The RESP sample's memory limit in bytes, 0 (the default, no limit) or more: SETs that would pass it get
    /// Redis's OOM error.</summary>
    public const string RespMaxMemoryKey = Section + ":RespMaxMemory";

    /// <summary>The TCP server's <see cref="TcpEchoServerOptions"/>, by property name.</summary>
    public const string TcpSection = Section + ":Tcp";

    /// <summary>The UDP server's <see cref="UdpEchoServerOptions"/>, by property name.</summary>
    public const string UdpSection = Section + ":Udp";

    /// <summary>The longest <see cref="StatsSecondsKey"/>: a day.</summary>
    public const int MaxStatsSeconds = 86_400;

    // Every key the section may hold.
    private static readonly HashSet<string> s_keys = new([ServersKey, StatsSecondsKey, RespMaxMemoryKey, TcpSection, UdpSection], StringComparer.OrdinalIgnoreCase);

    // What a settings file may hold at its top: this section, the Generic Host's logging filters and its own settings.
    private static readonly HashSet<string> s_fileSections = new(
        [Section, "Logging", "shutdownTimeoutSeconds", "servicesStartConcurrently", "servicesStopConcurrently", "environment", "applicationName", "contentRoot", "hostBuilder"],
        StringComparer.OrdinalIgnoreCase);

    /// <summary>Reads the host's settings, and checks every key of the section, those of a server that will not
    /// run included, so that a typo never passes unnoticed.</summary>
    /// <param name="configuration">The application's configuration.</param>
    /// <returns>The settings, with defaults for keys that are absent.</returns>
    /// <exception cref="OptionsValidationException">A key names no setting, or a value is invalid; the message names the key.</exception>
    public static HostSettings Read(IConfiguration configuration)
    {
        // The environment and the command line hold keys of every program; a settings file holds this one's alone, so
        // a section at its top that none of them reads is a misspelling, which would leave every setting in it unread.
        foreach (FileConfigurationProvider file in (configuration as IConfigurationRoot)?.Providers.OfType<FileConfigurationProvider>() ?? [])
        {
            if (file.GetChildKeys([], parentPath: null).FirstOrDefault(key => !s_fileSections.Contains(key)) is { } unknown)
            {
                throw Invalid($"'{unknown}' in {file.Source.Path} is not a section this program reads; it reads '{Section}' (and 'Logging' and the Generic Host's settings).");
            }
        }

        foreach (IConfigurationSection child in configuration.GetSection(Section).GetChildren())
        {
            if (!s_keys.Contains(child.Path))
            {
                throw Invalid($"'{child.Path}' is not a setting; the section holds {string.Join(", ", s_keys.Select(key => key[(Section.Length + 1)..]))}.");
            }
        }

        CheckServerSections(configuration);

        string servers = configuration[ServersKey]?.ToLowerInvariant() ?? "both";
        if (servers is not ("tcp" or "udp" or "both" or "resp"))
        {
            throw Invalid($"'{ServersKey}' expects tcp, udp or both, or resp, not '{servers}'.");
        }

        int statsSeconds = 0;
        if (configuration[StatsSecondsKey] is string stats
            && (!int.TryParse(stats, NumberStyles.None, CultureInfo.InvariantCulture, out statsSeconds) || statsSeconds > MaxStatsSeconds))
        {
            throw Invalid($"'{StatsSecondsKey}' expects a whole number from 0 to {MaxStatsSeconds}, not '{stats}'.");
        }

        long maxMemory = 0;
        if (configuration[RespMaxMemoryKey] is string memory && !long.TryParse(memory, NumberStyles.None, CultureInfo.InvariantCulture, out maxMemory))
        {
            throw Invalid($"'{RespMaxMemoryKey}' expects a whole number of bytes, 0 for no limit, not '{memory}'.");
        }

        return new HostSettings(servers != "udp", servers is "udp" or "both", statsSeconds == 0 ? null : TimeSpan.FromSeconds(statsSeconds), servers == "resp", maxMemory);
    }

    /// <summary>Binds both servers' sections as the servers bind them, strictly, whichever servers run.</summary>
    /// <exception cref="OptionsValidationException">A key or value is invalid; the message names it.</exception>
    private static void CheckServerSections(IConfiguration configuration)
    {
        using ServiceProvider servers = new ServiceCollection()
            .AddTcpEchoServer(configuration.GetSection(TcpSection))
            .AddUdpEchoServer(configuration.GetSection(UdpSection))
            .BuildServiceProvider();
        _ = servers.GetRequiredService<IOptions<TcpEchoServerOptions>>().Value;
        _ = servers.GetRequiredService<IOptions<UdpEchoServerOptions>>().Value;
    }

    private static OptionsValidationException Invalid(string message) => new(Options.DefaultName, typeof(HostSettings), [message]);
}
