using System.Diagnostics;
using System.Net.Sockets;
using PoolBench.Echo.Load;

namespace PoolBench.Connections;

/// <summary>
/// A worker of the pooled peers, as a pool user writes one: for each request, take a connection, write the command,
/// read until the reply is complete, release the connection. A connection whose request failed or got another reply
/// is discarded. Nothing is allocated per request: the reply buffer is the worker's, the loop one async method.
/// </summary>
internal static class RespWorker
{
    public static async Task RunAsync<TConnections, TLease>(TConnections connections, RespCommand command, RequestRun run, LatencyHistogram latency)
        where TConnections : IPooledConnections<TLease>
    {
        byte[] buffer = new byte[RespCommand.ReplyBufferSize];
        await run.Started.ConfigureAwait(false);
        while (run.TryClaim())
        {
            long started = Stopwatch.GetTimestamp();
            TLease lease;
            try
            {
                lease = await connections.TakeAsync(CancellationToken.None).ConfigureAwait(false);
            }
            catch (SocketException e)
            {
                run.Failed(e);
                continue;
            }

            try
            {
                await connections.SendAsync(lease, command.Request, CancellationToken.None).ConfigureAwait(false);
                int received = 0, length;
                while ((length = RespCommand.ReplyLength(buffer.AsSpan(0, received))) == 0)
                {
                    if (received == buffer.Length)
                    {
                        throw new InvalidDataException($"a reply longer than {buffer.Length} bytes");
                    }

                    int count = await connections.ReceiveAsync(lease, buffer.AsMemory(received), CancellationToken.None).ConfigureAwait(false);
                    received += count > 0 ? count : throw new IOException("the server closed the connection");
                }

                if (length != received || !command.IsExpected(buffer.AsSpan(0, length)))
                {
                    throw new InvalidDataException($"{command.Test} got an unexpected reply");
                }

                connections.Release(lease);
            }
            catch (Exception e) when (e is SocketException or IOException or InvalidDataException)
            {
                connections.Discard(lease);
                run.Failed(e);
            }

            latency.Record((long)Stopwatch.GetElapsedTime(started).TotalNanoseconds);
        }
    }
}
