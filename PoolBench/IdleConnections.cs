using System.Net.Sockets;

namespace PoolBench;

/// <summary>
/// Opens many TCP connections to one server, keeps them idle for a while, then sends one message
/// on every one of them and checks each echo: a server that holds many idle clients must still
/// serve all of them. The managed heap is read after a full collection before connecting and
/// while holding; for a server in this process it includes the client's own sockets, which the
/// same check against an out-of-process server measures alone; for a server in a child process,
/// that process's resident memory is read while holding. Connecting and echoing each have
/// a time limit, after which the sockets are closed and whatever is unfinished counts as failed.
/// </summary>
internal sealed class IdleConnections(IEchoServer server, int count, int size, TimeSpan hold)
{
    private const int ConnectBatch = 256;
    private static readonly TimeSpan s_stepTimeout = TimeSpan.FromSeconds(10);

    public async Task<IdleResult> RunAsync()
    {
        long heapBefore = GC.GetTotalMemory(forceFullCollection: true);
        var sockets = new List<Socket>(count);
        long errors = 0;
        try
        {
            for (int first = 0; first < count; first += ConnectBatch)
            {
                Socket[] batch = Enumerable.Range(0, Math.Min(ConnectBatch, count - first))
                    .Select(_ => new Socket(server.TcpEndPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true })
                    .ToArray();
                sockets.AddRange(batch);
                bool[] connected = await WithinLimitAsync(batch, batch.Select(s => TryAsync(s.ConnectAsync(server.TcpEndPoint)))).ConfigureAwait(false);
                errors += connected.Count(ok => !ok);
            }

            int open = sockets.Count(s => s.Connected);
            await Task.Delay(hold).ConfigureAwait(false);
            long heapHolding = GC.GetTotalMemory(forceFullCollection: true);
            double? serverMemory = server.ProcessMemoryMib;
            var pattern = new MessagePattern(size);
            bool[] echoed = await WithinLimitAsync(sockets, sockets.Select((s, i) => EchoOnceAsync(s, pattern, i))).ConfigureAwait(false);
            int good = echoed.Count(ok => ok);
            errors += open - good;
            return new IdleResult(server.Name, count, open, good, errors, heapHolding / 1048576.0, (heapHolding - heapBefore) / 1048576.0, serverMemory, hold.TotalSeconds);
        }
        finally
        {
            foreach (Socket socket in sockets)
            {
                socket.Dispose();
            }
        }
    }

    /// <summary>Waits for every step; past the time limit, closes the sockets so the steps end as failed.</summary>
    private static async Task<bool[]> WithinLimitAsync(IReadOnlyList<Socket> sockets, IEnumerable<Task<bool>> steps)
    {
        Task<bool[]> all = Task.WhenAll(steps);
        if (await Task.WhenAny(all, Task.Delay(s_stepTimeout)).ConfigureAwait(false) != all)
        {
            foreach (Socket socket in sockets)
            {
                socket.Dispose();
            }
        }

        return await all.ConfigureAwait(false);
    }

    private static async Task<bool> TryAsync(Task connecting)
    {
        try
        {
            await connecting.ConfigureAwait(false);
            return true;
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            return false;
        }
    }

    private static async Task<bool> EchoOnceAsync(Socket socket, MessagePattern pattern, long seq)
    {
        if (!socket.Connected)
        {
            return false;
        }

        var message = new byte[pattern.Size];
        pattern.Fill(message, seq);
        try
        {
            await socket.SendAsync(message, SocketFlags.None).ConfigureAwait(false);
            int filled = 0;
            while (filled < message.Length)
            {
                int received = await socket.ReceiveAsync(message.AsMemory(filled), SocketFlags.None).ConfigureAwait(false);
                if (received == 0)
                {
                    return false;
                }

                filled += received;
            }

            return pattern.Matches(message, seq);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            return false;
        }
    }

}
