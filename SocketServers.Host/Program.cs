using System.CommandLine;
using System.Xml;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using NLog;
using NLog.Config;
using NLog.Extensions.Logging;
using SocketServers.Resp;
using GenericHost = Microsoft.Extensions.Hosting.Host;

namespace SocketServers.Host;

/// <summary>
/// The console host: runs the TCP and/or UDP echo server on the Generic Host until Ctrl+C or SIGTERM. Settings come
/// from appsettings.json next to the program, then environment variables (<c>SocketServers__Tcp__Port</c>), then the
/// command line; logs go through <see cref="Microsoft.Extensions.Logging.ILogger"/> to NLog, configured by NLog.config.
/// </summary>
internal static class Program
{
    private const int ExitOk = 0;
    private const int ExitFailed = 1;
    private const int ExitUsage = 2;
    private const int ExitStopCutShort = 3;

    // Beside the program, where NLog looks for it too.
    private const string LoggingConfigurationFile = "NLog.config";

    // The socket engine reads this once, when the process first waits on a socket.
    private const string InlineCompletionsVariable = "DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS";

    private static async Task<int> Main(string[] args)
    {
        // Socket completions run on the socket engine's own threads instead of being handed to the
        // thread pool: the servers never block in a completion, and the hand-off was a thread switch
        // per message. A value the user set wins.
        if (Environment.GetEnvironmentVariable(InlineCompletionsVariable) is null)
        {
            Environment.SetEnvironmentVariable(InlineCompletionsVariable, "1");
        }

        var commandLine = new HostCommandLine();
        ParseResult parsed = commandLine.Parse(args);
        if (parsed.Errors.Count > 0)
        {
            await Console.Error.WriteLineAsync($"SocketServers: {OneLine(parsed.Errors[0].Message)} Try --help.").ConfigureAwait(false);
            return ExitUsage;
        }

        if (parsed.Action is not null)
        {
            // --help or --version.
            return await parsed.InvokeAsync().ConfigureAwait(false);
        }

        if (LoadLoggingConfiguration() is { } invalid)
        {
            await Console.Error.WriteLineAsync($"SocketServers: {OneLine(invalid)}").ConfigureAwait(false);
            return ExitUsage;
        }

        try
        {
            return await RunAsync(commandLine.ToConfiguration(parsed)).ConfigureAwait(false);
        }
        finally
        {
            LogManager.Shutdown();
        }
    }

    /// <summary>Loads NLog.config from beside the program, if it is there, before anything logs: NLog would otherwise
    /// load it on the first log line, and a file that is not well-formed XML would leave every line lost in silence,
    /// while one NLog refuses would end the process with the exception.</summary>
    /// <returns>What is wrong with the file, as one line; <see langword="null"/> when it loaded or is absent.</returns>
    private static string? LoadLoggingConfiguration()
    {
        string path = Path.Combine(AppContext.BaseDirectory, LoggingConfigurationFile);
        if (!File.Exists(path))
        {
            return null;
        }

        try
        {
            // Whatever the file says about its own errors, reading it throws them.
            LogManager.ThrowConfigExceptions = true;
            LogManager.Configuration = new XmlLoggingConfiguration(path);
            return null;
        }
        catch (Exception ex) when (ex is NLogConfigurationException or XmlException or IOException or UnauthorizedAccessException)
        {
            Exception cause = ex;
            while (cause is NLogConfigurationException { InnerException: { } inner })
            {
                cause = inner;
            }

            return $"{path} is not a valid NLog configuration: {cause.Message}";
        }
    }

    private static async Task<int> RunAsync(IEnumerable<KeyValuePair<string, string?>> commandLineSettings)
    {
        HostApplicationBuilder builder;
        HostSettings settings;
        try
        {
            // The servers read their options once, so a watcher on appsettings.json would change nothing.
            var initial = new ConfigurationManager();
            initial["hostBuilder:reloadConfigOnChange"] = "false";
            builder = GenericHost.CreateApplicationBuilder(new HostApplicationBuilderSettings
            {
                // appsettings.json is read from beside the program, wherever it is started from.
                ContentRootPath = AppContext.BaseDirectory,
                Configuration = initial,
            });
            builder.Configuration.AddInMemoryCollection(commandLineSettings);
            settings = HostSettings.Read(builder.Configuration);
        }
        catch (Exception ex) when (ex is OptionsValidationException or InvalidDataException)
        {
            // A setting that is invalid, or a settings file that is not JSON.
            await Console.Error.WriteLineAsync($"SocketServers: {OneLine(ex)}").ConfigureAwait(false);
            return ExitUsage;
        }

        builder.Logging.ClearProviders();
        builder.Logging.SetMinimumLevel(Microsoft.Extensions.Logging.LogLevel.Trace); // NLog.config decides
        builder.Logging.AddNLog();
        builder.Services.Configure<ConsoleLifetimeOptions>(options => options.SuppressStatusMessages = true);

        if (settings.Resp)
        {
            // The sample refuses, with an error reply, a request longer than a connection's receive may grow.
            IConfigurationSection tcpSection = builder.Configuration.GetSection(HostSettings.TcpSection);
            int maxMessageSize = tcpSection.GetValue<int?>(nameof(TcpServerOptions.MaxMessageSize)) ?? new TcpServerOptions().MaxMessageSize;
            builder.Services.AddSingleton(_ => new RespConnectionHandler(new RespStore(TimeProvider.System, settings.RespMaxMemory), maxMessageSize));
            builder.Services.AddTcpServer<RespConnectionHandler>(tcpSection);
        }
        else if (settings.RunTcp)
        {
            builder.Services.AddTcpEchoServer(builder.Configuration.GetSection(HostSettings.TcpSection));
        }

        if (settings.RunUdp)
        {
            builder.Services.AddUdpEchoServer(builder.Configuration.GetSection(HostSettings.UdpSection));
        }

        IHost host = builder.Build();
        try
        {
            return await RunAsync(host, settings).ConfigureAwait(false);
        }
        finally
        {
            // Asynchronously, so that the servers' stop blocks no thread.
            await ((IAsyncDisposable)host).DisposeAsync().ConfigureAwait(false);
        }
    }

    private static async Task<int> RunAsync(IHost host, HostSettings settings)
    {
        // Listening to SIGUSR1 and SIGUSR2 before the servers say they listen: their default action ends the process.
        using var stats = new StatsPrinter(Console.Out, settings.StatsInterval);
        SocketServer[] servers;
        try
        {
            // Reading the servers' options, here and as they are resolved, may find them invalid.
            if (settings.RunTcp && !FitToOpenFileLimit(host.Services, settings))
            {
                return ExitFailed;
            }

            servers = [.. host.Services.GetServices<IHostedService>().OfType<SocketServer>()];
            await host.StartAsync().ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            // Hosted services started concurrently (servicesStartConcurrently) fail together.
            Exception failure = ex is AggregateException { InnerExceptions: [Exception first, ..] } ? first : ex;
            await Console.Error.WriteLineAsync($"SocketServers: {OneLine(failure)}").ConfigureAwait(false);
            return failure is OptionsValidationException ? ExitUsage : ExitFailed;
        }

        foreach (SocketServer server in servers)
        {
            Console.WriteLine($"{Name(server)} listening on {server.LocalEndPoint}");
        }

        Console.WriteLine("Press Ctrl+C to stop.");
        using (host.Services.GetRequiredService<IHostApplicationLifetime>().ApplicationStopping.Register(() => Console.WriteLine("Stopping...")))
        using (new SecondStopSignal(servers, Console.Out, TimeProvider.System))
        {
            await host.WaitForShutdownAsync().ConfigureAwait(false);
        }

        foreach (SocketServer server in servers)
        {
            SocketServerCounters c = server.Counters;
            Console.WriteLine(server switch
            {
                TcpEchoServer => $"tcp: {c.TotalConnections} connections (peak {c.PeakConnections}), {c.MessagesHandled} receives and {c.BytesSent} bytes echoed, {c.Drops} dropped connections, {c.Rejected} rejected, {c.Evicted} evicted",
                TcpServer => $"resp: {c.TotalConnections} connections (peak {c.PeakConnections}), {c.MessagesHandled} receives handled, {c.BytesSent} bytes sent, {c.Drops} dropped connections, {c.Rejected} rejected, {c.Evicted} evicted",
                _ => $"udp: {c.MessagesHandled} datagrams and {c.BytesSent} bytes echoed, {c.Drops} dropped datagrams",
            });
        }

        if (servers.Any(server => server.StopCutShort))
        {
            // A supervisor or script that stopped the host learns that clients lost work in flight.
            await Console.Error.WriteLineAsync("SocketServers: the stop grace period ran out, or a second signal ended it; what was still in flight was closed.").ConfigureAwait(false);
            return ExitStopCutShort;
        }

        return ExitOk;
    }

    /// <summary>Lowers the TCP server's connection limit to what the open-file limit leaves, and says so on stderr: at
    /// the limit, clients then wait (or are refused) while the connections held go on, where running out of descriptors
    /// would end the process.</summary>
    /// <returns>Whether a connection fits at all.</returns>
    private static bool FitToOpenFileLimit(IServiceProvider services, HostSettings settings)
    {
        TcpServerOptions tcp = settings.Resp
            ? services.GetRequiredService<IOptionsMonitor<TcpServerOptions>>().Get(SocketServerServiceCollectionExtensions.OptionsName<RespConnectionHandler>())
            : services.GetRequiredService<IOptions<TcpEchoServerOptions>>().Value;
        int udpSockets = settings.RunUdp ? MostUdpSockets(services.GetRequiredService<IOptions<UdpEchoServerOptions>>().Value) : 0;
        if (OpenFileLimit.ForConnections(serverSockets: 1 + udpSockets) is not { } budget || budget.Connections >= tcp.MaxConnections)
        {
            return true;
        }

        string limit = $"the open-file limit ({budget.Limit} descriptors, {budget.Open} open, {OpenFileLimit.Reserve} kept in reserve)";
        if (budget.Connections < 1)
        {
            Console.Error.WriteLine($"SocketServers: {limit} leaves no room for a TCP connection; raise it (ulimit -n).");
            return false;
        }

        Console.Error.WriteLine(
            $"SocketServers: warning: {limit} leaves room for {budget.Connections} TCP connections, not the {tcp.MaxConnections} of "
            + $"--max-connections: serving at most {budget.Connections} at once; raise the limit (ulimit -n) to serve more.");
        tcp.MaxConnections = budget.Connections;
        return true;
    }

    /// <summary>The most sockets the UDP server binds: one, or with <see cref="SocketServerOptions.ReusePort"/> on Linux one
    /// per receive, of which the server picks at most <see cref="UdpServerOptions.MaxAutomaticConcurrentReceives"/>.</summary>
    private static int MostUdpSockets(UdpEchoServerOptions udp) => !udp.ReusePort || !OperatingSystem.IsLinux()
        ? 1
        : udp.ConcurrentReceives != 0 ? udp.ConcurrentReceives : UdpServerOptions.MaxAutomaticConcurrentReceives;

    /// <summary>How the start and stop lines name <paramref name="server"/>.</summary>
    private static string Name(SocketServer server) => server switch
    {
        TcpEchoServer => "tcp echo",
        UdpEchoServer => "udp echo",
        _ => "resp",
    };

    /// <summary>The failure as one line: the message alone for what the host expects to go wrong (bad settings,
    /// binding), with the type for anything else.</summary>
    private static string OneLine(Exception exception)
    {
        string message = exception switch
        {
            OptionsValidationException or IOException or PlatformNotSupportedException => exception.Message,
            InvalidDataException { InnerException: { } cause } => $"{exception.Message} {cause.Message}", // the parser's reason
            _ => $"{exception.GetType().Name}: {exception.Message}",
        };
        return OneLine(message);
    }

    /// <summary>A message as one line, whatever line breaks or tabs it holds.</summary>
    private static string OneLine(string message) => string.Join(' ', message.Split(['\r', '\n', '\t'], StringSplitOptions.RemoveEmptyEntries));
}
