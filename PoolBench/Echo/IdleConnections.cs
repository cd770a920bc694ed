using System.Diagnostics;
using System.Net;
using NLog;
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

    public async Task<IdleResult> RunAsync()
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
        IdleClientCounts counts = await clients.EchoAsync().ConfigureAwait(false);
        return new IdleResult(
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
}
