using System.Net.Sockets;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

public sealed partial class TcpEchoServer
{
    private static readonly TimeSpan s_acceptErrorBackoff = TimeSpan.FromMilliseconds(100);

    private async Task AcceptLoopAsync(Socket listener)
    {
        // Run on the thread pool, not on the caller of StartAsync.
        await Task.CompletedTask.ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        CancellationToken stopping = StoppingToken;
        try
        {
            while (!stopping.IsCancellationRequested)
            {
                // At MaxConnections this waits until a connection ends; the backlog holds new clients.
                if (await TakeSlotUnlessStoppingAsync().ConfigureAwait(false) is not { } slot)
                {
                    break;
                }

                var args = (PooledSocketArgs)slot.Object;
                SocketError error;
                try
                {
                    // No buffer: an accept with one would also wait for the client's first bytes.
                    args.AcceptSocket = null;
                    args.SetBuffer(null, 0, 0);
                    await args.AcceptAsync(listener).ConfigureAwait(false);
                    error = args.SocketError;
                }
                catch (ObjectDisposedException)
                {
                    error = SocketError.OperationAborted;
                }
                catch
                {
                    Pool.Release(slot);
                    throw;
                }

                if (error == SocketError.Success)
                {
                    Socket accepted = args.AcceptSocket!;
                    args.AcceptSocket = null;
                    StartConnection(slot, args, accepted);
                    continue;
                }

                Pool.Release(slot);
                if (stopping.IsCancellationRequested || error == SocketError.OperationAborted)
                {
                    break;
                }

                if (error is SocketError.ConnectionAborted or SocketError.ConnectionReset)
                {
                    s_logger.Debug("TCP accept on {EndPoint}: client left before accept ({SocketError})", LocalEndPoint, error);
                    continue;
                }

                // For example too many open files: wait a little instead of spinning.
                s_logger.Warn("TCP accept on {EndPoint} failed: {SocketError}", LocalEndPoint, error);
                await Task.Delay(s_acceptErrorBackoff, stopping).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            }
        }
        catch (Exception ex)
        {
            s_logger.Error(ex, "TCP accept loop on {EndPoint} failed; no new connections are accepted", LocalEndPoint);
        }
    }

    /// <summary>Runs on each accepted socket before its connection is set up; for tests that make the set-up fail.</summary>
    internal Action<Socket>? BeforeConnectionSetup { get; set; }

    private void StartConnection(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket)
    {
        Connection connection;
        try
        {
            BeforeConnectionSetup?.Invoke(socket);
            socket.NoDelay = true;
            connection = new Connection(this, slot, args, socket, Interlocked.Increment(ref _lastConnectionId));
        }
        catch (Exception ex)
        {
            // One socket failed (typically a peer that reset before we got to it): close it, give its
            // slot back, and keep accepting.
            socket.Dispose();
            Pool.Release(slot);
            CountDrop();
            s_logger.Debug(ex, "TCP connection on {EndPoint} closed during set-up", LocalEndPoint);
            return;
        }

        _connections.TryAdd(connection, 0);
        CountConnectionOpened();
        ThreadPool.UnsafeQueueUserWorkItem(connection, preferLocal: false);
    }

    private async Task SweepIdleConnectionsAsync()
    {
        // One sweep for all connections: no timer per connection and nothing per message but a timestamp.
        long period = Math.Clamp(_idleTimeout.Ticks / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond);
        long timeoutMs = (long)_idleTimeout.TotalMilliseconds;
        try
        {
            using var timer = new PeriodicTimer(TimeSpan.FromTicks(period));
            while (await timer.WaitForNextTickAsync(StoppingToken).ConfigureAwait(false))
            {
                long now = Environment.TickCount64;
                foreach (var (connection, _) in _connections)
                {
                    if (now - connection.LastActivity >= timeoutMs)
                    {
                        connection.CloseIdle();
                    }
                }
            }
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
        catch (Exception ex)
        {
            s_logger.Error(ex, "TCP idle sweep on {EndPoint} failed; idle connections are no longer closed", LocalEndPoint);
        }
    }
}
