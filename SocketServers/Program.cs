using System.Runtime.InteropServices;
using NLog;

namespace SocketServers;

/// <summary>The console host: runs the TCP and/or UDP echo server until Ctrl+C or SIGTERM.</summary>
internal static class Program
{
    private const int ExitOk = 0;
    private const int ExitFailed = 1;
    private const int ExitUsage = 2;

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

        if (!HostOptions.TryParse(args, out HostOptions? options, out string? error))
        {
            await Console.Error.WriteLineAsync($"SocketServers: {error} Try --help.").ConfigureAwait(false);
            return ExitUsage;
        }

        if (options.ShowHelp)
        {
            await Console.Out.WriteAsync(HostOptions.Usage).ConfigureAwait(false);
            return ExitOk;
        }

        try
        {
            return await RunAsync(options).ConfigureAwait(false);
        }
        finally
        {
            LogManager.Shutdown();
        }
    }

    private static async Task<int> RunAsync(HostOptions options)
    {
        var stopRequested = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        void OnSignal(PosixSignalContext context)
        {
            context.Cancel = true; // stop gracefully instead of being killed
            stopRequested.TrySetResult();
        }

        using var sigint = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
        using var sigterm = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
        using var stats = new StatsPrinter(Console.Out, options.StatsInterval);

        var servers = new List<EchoServer>();
        try
        {
            if (options.RunTcp)
            {
                servers.Add(new TcpEchoServer(options.CreateTcpOptions()));
            }

            if (options.RunUdp)
            {
                servers.Add(new UdpEchoServer(options.CreateUdpOptions()));
            }

            foreach (EchoServer server in servers)
            {
                await server.StartAsync().ConfigureAwait(false);
                Console.WriteLine($"{(server is TcpEchoServer ? "tcp" : "udp")} echo listening on {server.LocalEndPoint}");
            }

            Console.WriteLine("Press Ctrl+C to stop.");
            await stopRequested.Task.ConfigureAwait(false);
            Console.WriteLine("Stopping...");
            await Task.WhenAll(servers.Select(server => server.StopAsync())).ConfigureAwait(false);
            foreach (EchoServer server in servers)
            {
                EchoServerCounters c = server.Counters;
                Console.WriteLine(server is TcpEchoServer
                    ? $"tcp: {c.TotalConnections} connections (peak {c.PeakConnections}), {c.MessagesEchoed} receives and {c.BytesEchoed} bytes echoed, {c.Drops} dropped connections"
                    : $"udp: {c.MessagesEchoed} datagrams and {c.BytesEchoed} bytes echoed, {c.Drops} dropped datagrams");
            }

            return ExitOk;
        }
        catch (Exception ex) when (ex is IOException or PlatformNotSupportedException)
        {
            // Bind failures (port in use, address not local, reuse-port where there is none): one clear line, no stack trace.
            await Console.Error.WriteLineAsync($"SocketServers: {ex.Message}").ConfigureAwait(false);
            return ExitFailed;
        }
        catch (Exception ex)
        {
            LogManager.GetCurrentClassLogger().Error(ex, "The host failed");
            await Console.Error.WriteLineAsync($"SocketServers: {ex.GetType().Name}: {ex.Message}").ConfigureAwait(false);
            return ExitFailed;
        }
        finally
        {
            foreach (EchoServer server in servers)
            {
                await server.DisposeAsync().ConfigureAwait(false);
            }
        }
    }
}
