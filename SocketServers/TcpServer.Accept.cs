using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

public partial class TcpServer
{
    /// <summary>Accepts clients until the server stops.</summary>
    /// <exception cref="Exception">Anything unexpected; every args taken is back in the pool by then.</exception>
    private async Task AcceptLoopAsync(Socket listener)
    {
        CancellationToken stopping = StoppingToken;
        while (!stopping.IsCancellationRequested)
        {
            // Over the cap on handshakes in flight, clients wait in the backlog.
            if (_preamble is { } preamble && !await preamble.WaitForRoomAsync(stopping).ConfigureAwait(false))
            {
                break;
            }

            SocketError error;
            PoolSlot<SocketAsyncEventArgs>? slot = null;
            if (_rejectWhenFull && !Pool.TryTakeSlot(out slot))
            {
                error = await AcceptWhileFullAsync(listener, stopping).ConfigureAwait(false);
            }
            else
            {
                // At MaxConnections this waits until a connection ends; the backlog holds new clients.
                slot ??= await TakeSlotUnlessStoppingAsync().ConfigureAwait(false);
                if (slot is null)
                {
                    break;
                }

                error = await AcceptAsync(listener, slot).ConfigureAwait(false);
            }

            _preamble?.ReturnUnusedRoom();
            if (error != SocketError.Success && !await _acceptFailures.OnFailedAsync(error, stopping).ConfigureAwait(false))
            {
                break;
            }
        }
    }

    /// <summary>Accepts the next client on <paramref name="slot"/>'s args and starts its connection.</summary>
    /// <returns>How the accept went; on failure the slot is back in the pool.</returns>
    private async ValueTask<SocketError> AcceptAsync(Socket listener, PoolSlot<SocketAsyncEventArgs> slot)
    {
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

        if (error != SocketError.Success)
        {
            Pool.Release(slot);
            return error;
        }

        Socket accepted = args.AcceptSocket!;
        args.AcceptSocket = null;
        StartConnection(slot, args, accepted);
        return SocketError.Success;
    }

    /// <summary>
    /// With <see cref="TcpServerOptions.RejectWhenFull"/>, at the connection limit: accepts the next
    /// client without an args, and serves it if a connection ended meanwhile, or closes it at once.
    /// </summary>
    /// <returns>How the accept went.</returns>
    private async ValueTask<SocketError> AcceptWhileFullAsync(Socket listener, CancellationToken stopping)
    {
        Socket accepted;
        try
        {
            accepted = await listener.AcceptAsync(stopping).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is OperationCanceledException or ObjectDisposedException)
        {
            return SocketError.OperationAborted;
        }
        catch (SocketException ex)
        {
            return ex.SocketErrorCode;
        }

        if (Pool.TryTakeSlot(out PoolSlot<SocketAsyncEventArgs>? slot))
        {
            StartConnection(slot, (PooledSocketArgs)slot.Object, accepted);
        }
        else
        {
            Reject(accepted, "the server is at its connection limit");
        }

        return SocketError.Success;
    }

    /// <summary>Closes a client the server will not serve, and counts it.</summary>
    /// <param name="socket">The client's socket.</param>
    /// <param name="why">Why, for the log line.</param>
    /// <param name="remoteEndPoint">The client's address to log, a PROXY header's; <see langword="null"/> for the socket's.</param>
    private void Reject(Socket socket, string why, EndPoint? remoteEndPoint = null)
    {
        EndPoint? client = Logger.IsEnabled(LogLevel.Debug) ? remoteEndPoint ?? RemoteEndPointOrNull(socket) : null;

        // Counted first: the client sees the close as soon as it happens. Closed before the line is logged, which may fail.
        Count.Rejected();
        socket.Dispose();
        if (client is not null)
        {
            Logger.ClientRejected(client, why);
        }
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

    /// <summary>How many clients wait in the listen backlog while every connection is taken: as many as the listener's
    /// accept queue holds on Linux, elsewhere 1 when any does; 0 while there is room.</summary>
    private int WaitingClients()
    {
        // With RejectWhenFull nobody waits: a client the backlog holds is accepted only to be closed. A connection in its
        // PROXY header or TLS handshake holds a slot too.
        if (_rejectWhenFull || Count.OpenConnections + (_preamble?.Running ?? 0) < _maxConnections || _listener is not { } listener)
        {
            return 0;
        }

        if (QueuedConnections is > 0 and var queued)
        {
            return (int)Math.Min(queued, int.MaxValue);
        }

        try
        {
            // A listening socket reads as readable while a connection waits to be accepted.
            return listener.Poll(0, SelectMode.SelectRead) ? 1 : 0;
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            return 0;
        }
    }

    private void StartConnection(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket)
    {
        if (_preamble is { } preamble)
        {
            // The PROXY header and the TLS handshake first; the preamble calls OpenConnection when done.
            preamble.Run(slot, args, socket, StoppingToken);
            return;
        }

        OpenConnection(slot, args, socket, client: null, tls: null);
    }

    /// <summary>Starts serving an accepted socket, unless its client is at the per-address limit.</summary>
    /// <param name="slot">The pooled args' slot, taken for the connection.</param>
    /// <param name="args">The pooled args.</param>
    /// <param name="socket">The accepted socket, which the connection owns.</param>
    /// <param name="client">The client's address from a PROXY header; <see langword="null"/> for the socket's.</param>
    /// <param name="tls">The authenticated TLS stream, which the connection owns; <see langword="null"/> without TLS.</param>
    private void OpenConnection(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, EndPoint? client, SslStream? tls)
    {
        SocketConnection connection;
        try
        {
            socket.NoDelay = true;
            connection = new SocketConnection(this, slot, args, socket, Interlocked.Increment(ref _lastConnectionId), client, tls);
            if (!_perAddressLimit.TryClaim(connection.RemoteAddress))
            {
                Pool.Release(slot);
                tls?.Dispose();
                Reject(socket, "its address is at the per-address connection limit", client);
                return;
            }
        }
        catch (Exception ex)
        {
            // One socket failed (typically a peer that reset before we got to it): close it, give its
            // slot back, and keep accepting.
            tls?.Dispose();
            socket.Dispose();
            Pool.Release(slot);
            Count.Dropped();
            Logger.ConnectionSetUpFailed(ex, LocalEndPoint);
            return;
        }

        _sweep.Add(connection);
        Interlocked.Increment(ref _holdingSlots);
        Count.ConnectionOpened();
        ThreadPool.UnsafeQueueUserWorkItem(connection, preferLocal: false);
    }
}
