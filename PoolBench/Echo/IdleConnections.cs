using System.Diagnostics;
using System.Net;
using NLog;
using PoolBench.Report;
using PoolBench.Echo.Servers;

namespace PoolBench.Echo;

/// <summary>
/// Opens many TCP connections to one server, keeps them idle for a while, then sends one message
/// on every one of them and checks each echo: a server that holds many idle clients must still
/// serve all of them. The clients run in a child process (<see cref="IdleClientProcess"/>), for
/// every server alike, so this process holds no client socket. The server's managed heap is read
/// after a full collection, before connecting and while holding: for a server in this process,
/// here (the server's, and the benchmark's small, fixed share); for our server in a child process,
/// by asking the child (<see cref="IEchoServer.ReadManagedHeapAsync"/>). A child's resident memory
/// is read while holding too.
/// </summary>
internal sealed class IdleConnections(IEchoServer server, int count, int size, TimeSpan hold)
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly TimeSpan s_acceptTimeout = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Runs the check on every server in turn and prints its table; a check that cannot run to the end, or a
    /// connection that fails, is a failure of the run.
    /// </summary>
    public static async Task RunAllAsync(IReadOnlyList<IEchoServer> servers, int count, int size, TimeSpan hold, string quickLabel, BenchReport report)
    {
        var table = new MarkdownTable(
            "server", "connections", "connected", "echoed", "errors", "heap MiB", "heap growth MiB", "heap committed MiB", "server process MiB");
        foreach (IEchoServer server in servers)
        {
            s_log.Info("echo: {0}, {1} idle TCP connections from a child process for {2} s", server.Name, count, hold.TotalSeconds);
            Result result;
            try
            {
                result = await new IdleConnections(server, count, size, hold).RunAsync().ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or System.ComponentModel.Win32Exception or TimeoutException or IOException)
            {
                report.Fail($"echo: {server.Name}: the idle-connections check did not run to the end: {e.Message}");
                continue;
            }

            report.Add(result);
            if (result.Errors > 0)
            {
                report.Fail($"echo: {server.Name}: {result.Errors} of {count} idle TCP connections failed to connect or echo");
            }

            table.Row(
                server.Name,
                CellText.Count(result.Connections),
                CellText.Count(result.Connected),
                CellText.Count(result.Echoed),
                CellText.Count(result.Errors),
                CellText.Optional(result.HeapMib),
                CellText.Optional(result.HeapDeltaMib),
                CellText.Optional(result.HeapCommittedMib),
                CellText.Optional(result.ServerProcessMib));
        }

        table.Print($"echo: {count} idle TCP connections from a child process, held {hold.TotalSeconds:0.##} s, then one echo on each (heap: our server's managed heap after a full GC while holding, read in this process for ours or asked of the child for ours-process, with no client socket in either; server process: a child server's resident memory){quickLabel}");
    }

    /// <summary>Connects, holds, reads the heap and echoes once on every connection, for this server.</summary>
    private async Task<Result> RunAsync()
    {
        IPEndPoint endPoint = server.TcpEndPoint as IPEndPoint
            ?? throw new InvalidOperationException($"{server.Name} has no IP end point to connect to");
        await using IdleClientProcess clients = IdleClientProcess.Start(endPoint, count, size, hold);

        // The baseline is taken with the client child already started, so its process objects are in both readings.
        (double HeapMib, double CommittedMib)? before = await server.ReadManagedHeapAsync().ConfigureAwait(false);
        long acceptedBefore = server.AcceptedTcpConnections ?? 0;
        int connected = await clients.ConnectAsync().ConfigureAwait(false);
        await Task.Delay(hold).ConfigureAwait(false);
        await WaitUntilAcceptedAsync(acceptedBefore + connected).ConfigureAwait(false);

        (double HeapMib, double CommittedMib)? holding = await server.ReadManagedHeapAsync().ConfigureAwait(false);
        double? serverMemory = server.ProcessMemoryMib;
        IdleClientProcess.Counts counts = await clients.EchoAsync().ConfigureAwait(false);
        return new Result(
            server.Name,
            count,
            counts.Connected,
            counts.Echoed,
            counts.Errors,
            holding?.HeapMib,
            holding?.HeapMib - before?.HeapMib,
            holding?.CommittedMib,
            serverMemory,
            hold.TotalSeconds);
    }

    /// <summary>
    /// The child reports a connection as soon as the kernel has completed it, which can be before
    /// the server has accepted it from the listen backlog; the heap is read only once a server that
    /// counts its connections has accepted all of them. The counter has no completion to await, so
    /// it is polled, within a time limit; after the hold it is almost always reached at once.
    /// </summary>
    private async Task WaitUntilAcceptedAsync(long target)
    {
        long start = Stopwatch.GetTimestamp();
        while (server.AcceptedTcpConnections is long accepted && accepted < target)
        {
            if (Stopwatch.GetElapsedTime(start) > s_acceptTimeout)
            {
                s_log.Warn("echo: {0} accepted {1} of {2} idle connections within {3} s; the heap is read anyway", server.Name, accepted, target, s_acceptTimeout.TotalSeconds);
                return;
            }

            await Task.Delay(10).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The check of one server, as written to JSON. The heap figures are this process's managed heap after a full
    /// collection, so they are the server's only when it runs in this process (null otherwise).
    /// </summary>
    public sealed record Result(
        string Server,
        int Connections,
        int Connected,
        int Echoed,
        long Errors,
        double? HeapMib,
        double? HeapDeltaMib,
        double? HeapCommittedMib,
        double? ServerProcessMib,
        double HoldSeconds)
    {
        public string Scenario => "echo-idle";
    }
}
