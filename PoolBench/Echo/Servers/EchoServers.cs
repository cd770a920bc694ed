using System.ComponentModel;
using System.Net.Sockets;
using NLog;
using PoolBench.Report;

namespace PoolBench.Echo.Servers;

/// <summary>Starts the servers that <c>--server</c> and <c>--target</c> name, for the echo load and the soak.</summary>
internal static class EchoServers
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    /// <summary>Our servers, in this process or in their own: the ones the others are compared with.</summary>
    public static bool IsOurs(IEchoServer server) => server.Name == "ours" || server.Name.StartsWith("ours-process", StringComparison.Ordinal);

    /// <summary>Starts every server asked for, in order; one that cannot start is a failure, and the others still run.</summary>
    /// <param name="maxConnections">Our servers' TCP connection limit.</param>
    /// <param name="size">The largest message: our servers' buffers and datagrams hold at least this.</param>
    public static async Task<List<IEchoServer>> StartAsync(BenchOptions options, BenchReport report, int maxConnections, int size)
    {
        var servers = new List<IEchoServer>();
        foreach (string server in options.Servers)
        {
            try
            {
                await StartAsync(server, options, maxConnections, size, servers).ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or Win32Exception or TimeoutException or ArgumentException or IOException)
            {
                report.Fail($"{options.Scenario}: could not start the {server} server: {e.Message}");
            }
        }

        foreach (string target in options.Target?.Split(',') ?? [])
        {
            try
            {
                servers.Add(await TargetEchoServer.ResolveAsync(target).ConfigureAwait(false));
            }
            catch (Exception e) when (e is ArgumentException or SocketException)
            {
                report.Fail($"{options.Scenario}: {e.Message}");
            }
        }

        return servers;
    }

    /// <summary>Starts the servers one <c>--server</c> name stands for and adds them to <paramref name="servers"/>.</summary>
    private static async Task StartAsync(string server, BenchOptions options, int maxConnections, int size, List<IEchoServer> servers)
    {
        switch (server)
        {
            case "ours":
                servers.Add(await OurEchoServer.StartAsync(maxConnections, size).ConfigureAwait(false));
                break;
            case "ours-process":
                // One host per --server-env setting, named after it.
                foreach (IReadOnlyDictionary<string, string> environment in options.ServerEnvironments)
                {
                    string name = environment.Count == 0
                        ? "ours-process"
                        : $"ours-process {string.Join(',', environment.Select(variable => $"{variable.Key}={variable.Value}"))}";
                    servers.Add(await ChildEchoServer.StartOursAsync(name, maxConnections, Math.Max(8192, size), options.ServerCpus, environment).ConfigureAwait(false));
                }

                break;
            case "kestrel":
                servers.Add(await ChildEchoServer.StartKestrelAsync(options.ServerCpus).ConfigureAwait(false));
                break;
            case "peer":
                servers.Add(await ChildEchoServer.StartNodeAsync(options.ServerCpus).ConfigureAwait(false));
                break;
            case "c":
                if (await CPeerBuild.BuildAsync("echo-server").ConfigureAwait(false) is string program)
                {
                    servers.Add(await ChildEchoServer.StartCAsync(program, options.CThreads, options.ServerCpus).ConfigureAwait(false));
                }
                else
                {
                    s_log.Warn("the C server is skipped: there is no gcc on the path to build peers/echo-server.c with (apt-get install gcc)");
                }

                break;
            default:
                throw new ArgumentException($"unknown server '{server}'");
        }
    }
}
