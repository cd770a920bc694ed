using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
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
                PoolSlot<SocketAsyncEventArgs>? slot = null;
                if (_rejectWhenFull && !Pool.TryTakeSlot(out slot))
                {
                    await AcceptWhileFullAsync(listener, stopping).ConfigureAwait(false);
                    continue;
                }

                // At MaxConnections this waits until a connection ends; the backlog holds new clients.
                slot ??= await TakeSlotUnlessStoppingAsync().ConfigureAwait(false);
                if (slot is null)
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
                    Logger.AcceptClientLeft(LocalEndPoint, error);
                    continue;
                }

                // For example too many open files: wait a little instead of spinning.
                if (Logger.IsEnabled(LogLevel.Warning) && _acceptWarnings.TryAcquire(out long suppressed))
                {
                    Logger.AcceptFailed(LocalEndPoint, error, LogRateLimiter.SuppressedNote(suppressed));
                }

                await Task.Delay(s_acceptErrorBackoff, stopping).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            }
        }
        catch (Exception ex)
        {
            Logger.AcceptLoopFailed(ex, LocalEndPoint);
        }
    }

    /// <summary>
    /// With <see cref="TcpEchoServerOptions.RejectWhenFull"/>, at the connection limit: accepts the next
    /// client without an args, and serves it if a connection ended meanwhile, or closes it at once.
    /// </summary>
    private async Task AcceptWhileFullAsync(Socket listener, CancellationToken stopping)
    {
        Socket accepted;
        try
        {
            accepted = await listener.AcceptAsync(stopping).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is OperationCanceledException or ObjectDisposedException)
        {
            return;
        }
        catch (SocketException ex)
        {
            Logger.AcceptWhileFullFailed(LocalEndPoint, ex.SocketErrorCode);
            return;
        }

        if (Pool.TryTakeSlot(out PoolSlot<SocketAsyncEventArgs>? slot))
        {
            StartConnection(slot, (PooledSocketArgs)slot.Object, accepted);
            return;
        }

        Reject(accepted, "the server is at its connection limit");
    }

    /// <summary>Closes a client the server will not serve, and counts it.</summary>
    private void Reject(Socket socket, string why)
    {
        if (Logger.IsEnabled(LogLevel.Debug))
        {
            Logger.ClientRejected(RemoteEndPointOrNull(socket), why);
        }

        // Counted first: the client sees the close as soon as it happens.
        CountRejected();
        socket.Dispose();
    }

    private static EndPoint? RemoteEndPointOrNull(Socket socket)
    {
        try
        {
            return socket.RemoteEndPoint;
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            return null;
        }
    }

    /// <summary>Counts one more connection from <paramref name="address"/>; <see langword="false"/>, counting nothing, if that would pass the per-address limit.</summary>
    private bool TryClaimAddress(IPAddress address)
    {
        while (true)
        {
            int open = _connectionsPerAddress.GetValueOrDefault(address);
            if (open >= _maxConnectionsPerAddress)
            {
                return false;
            }

            if (open == 0 ? _connectionsPerAddress.TryAdd(address, 1) : _connectionsPerAddress.TryUpdate(address, open + 1, open))
            {
                return true;
            }
        }
    }

    /// <summary>Counts one connection fewer from <paramref name="address"/>, forgetting the address at zero.</summary>
    private void ReleaseAddress(IPAddress address)
    {
        while (true)
        {
            int open = _connectionsPerAddress[address];
            if (open == 1 ? _connectionsPerAddress.TryRemove(KeyValuePair.Create(address, 1)) : _connectionsPerAddress.TryUpdate(address, open - 1, open))
            {
                return;
            }
        }
    }

    /// <summary>Whether every connection is taken and a client is waiting in the listen backlog.</summary>
    private bool IsFullWithClientWaiting()
    {
        if (OpenConnections < _maxConnections || _listener is not { } listener)
        {
            return false;
        }

        try
        {
            // A listening socket reads as readable while a connection waits to be accepted.
            return listener.Poll(0, SelectMode.SelectRead);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            return false;
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
            if (_maxConnectionsPerAddress > 0 && connection.RemoteAddress is { } address && !TryClaimAddress(address))
            {
                Pool.Release(slot);
                Reject(socket, "its address is at the per-address connection limit");
                return;
            }
        }
        catch (Exception ex)
        {
            // One socket failed (typically a peer that reset before we got to it): close it, give its
            // slot back, and keep accepting.
            socket.Dispose();
            Pool.Release(slot);
            CountDrop();
            Logger.ConnectionSetUpFailed(ex, LocalEndPoint);
            return;
        }

        _connections.TryAdd(connection, 0);
        CountConnectionOpened();
        ThreadPool.UnsafeQueueUserWorkItem(connection, preferLocal: false);
    }

    /// <summary>
    /// One periodic sweep over all connections: closes idle ones, and, while every connection is taken and a
    /// client waits in the backlog, evicts the quietest of those below the minimum data rate. No timer per
    /// connection, and nothing per message but a timestamp and a byte count.
    /// </summary>
    private async Task SweepConnectionsAsync()
    {
        bool closesIdle = _idleTimeout != Timeout.InfiniteTimeSpan;
        long period = closesIdle
            ? Math.Clamp(_idleTimeout.Ticks / 4, TimeSpan.TicksPerMillisecond * 10, TimeSpan.TicksPerSecond)
            : TimeSpan.TicksPerSecond;
        if (_minDataRate > 0)
        {
            // Often enough that a waiting client is served within a window and a little.
            period = Math.Min(period, Math.Max(TimeSpan.TicksPerMillisecond, _slowConnectionWindow.Ticks / 4));
        }

        long timeoutMs = closesIdle ? (long)_idleTimeout.TotalMilliseconds : long.MaxValue;
        long windowMs = (long)_slowConnectionWindow.TotalMilliseconds;
        try
        {
            using var timer = new PeriodicTimer(TimeSpan.FromTicks(period));
            while (await timer.WaitForNextTickAsync(StoppingToken).ConfigureAwait(false))
            {
                long now = Environment.TickCount64;
                Connection? quietestSlow = null;
                foreach (var (connection, _) in _connections)
                {
                    long lastActivity = connection.LastActivity;
                    if (now - lastActivity >= timeoutMs)
                    {
                        connection.CloseIdle();
                    }
                    else if (_minDataRate > 0 && connection.IsSlow(now, windowMs, _minDataRate)
                        && (quietestSlow is null || lastActivity < quietestSlow.LastActivity))
                    {
                        quietestSlow = connection;
                    }
                }

                if (quietestSlow is not null && IsFullWithClientWaiting())
                {
                    quietestSlow.Evict();
                }
            }
        }
        catch (OperationCanceledException)
        {
            // Stopping.
        }
        catch (Exception ex)
        {
            Logger.SweepFailed(ex, LocalEndPoint);
        }
    }
}
