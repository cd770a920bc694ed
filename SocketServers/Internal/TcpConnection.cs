using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>One accepted connection: its socket, its pooled args and its receive/send loop.</summary>
/// <remarks>
/// <para>
/// The loop owns the socket and the args; other threads (the idle sweep, the stop) only shut the socket down
/// or dispose it, which makes a pending operation complete. The args goes back to the pool only after the loop
/// has seen its last operation complete.
/// </para>
/// <para>
/// A graceful stop reads nothing more, sends what was read, ends the stream (shuts down the send side), then
/// reads and drops what the client still sends until it closes: closing with unread input would reset the
/// connection, and a reset destroys the echoes the client has not read yet. Who ends the stream is decided by a
/// handshake on <see cref="_phase"/>: the loop publishes <see cref="Waiting"/> and then reads the stop request;
/// the stop publishes its request and then moves <see cref="Waiting"/> to <see cref="Ended"/>; each with a full
/// fence, so at least one sees the other, and the one compare-and-swap that wins shuts the send side down.
/// </para>
/// </remarks>
internal sealed class TcpConnection : IThreadPoolWorkItem
{
    private const int NoCloseRequest = 0;
    private const int StopRequested = 1;
    private const int IdleClose = 2;
    private const int Aborted = 3;
    private const int Evicted = 4;

    // _phase: echoing what it reads (the loop sees a stop before its next read); waiting for data with nothing
    // owed (the stop may end the stream itself); the stream ended for the stop, input discarded.
    private const int Echoing = 0;
    private const int Waiting = 1;
    private const int Ended = 2;

    private readonly ITcpConnectionOwner _owner;
    private readonly PooledSocketArgs _args;
    private readonly Socket _socket;
    private readonly long _id;
    private readonly EndPoint? _remoteEndPoint;

    // The owner's clock (milliseconds, monotonic); null for Environment.TickCount64, read directly.
    private readonly Func<long>? _clock;

    // The clock at the last completed receive or send; read by the idle sweep.
    private long _lastActivity;

    // The clock when accepted, for the connection-duration histogram.
    private readonly long _openedAt;

    // Bytes received so far; written by the loop, read by the sweep.
    private long _bytesReceived;

    // The sweep's alone: the receive rate over the current and the last window. A mutable struct updated in
    // place, so never readonly: a readonly field would hand the sweep a copy and the window would never move.
    private DataRateWindow _rateWindow;

    // Why the server closes this connection, if it does: NoCloseRequest until the first of stop, idle
    // sweep or abort sets it (Aborted overrides the others).
    private int _closeRequest;

    // Echoing, Waiting or Ended. Only the loop moves Echoing to Waiting and back; Waiting to Ended, by the loop
    // or the stop, happens once and is final.
    private int _phase;

    /// <summary>Sets up a connection on an accepted socket; <see cref="Execute"/> runs it.</summary>
    /// <param name="owner">The server that accepted it.</param>
    /// <param name="slot">The pooled args' slot, which the owner takes back when the connection has closed.</param>
    /// <param name="args">The pooled args the connection's socket operations run on.</param>
    /// <param name="socket">The accepted socket; the connection owns it from now on.</param>
    /// <param name="id">The connection's number in log lines.</param>
    public TcpConnection(ITcpConnectionOwner owner, PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, long id)
    {
        _owner = owner;
        Slot = slot;
        _args = args;
        _socket = socket;
        _id = id;
        _remoteEndPoint = socket.RemoteEndPoint;

        // Reads with a buffer never wait (see EchoWhileDataAsync); only the zero-byte receive does.
        socket.Blocking = false;
        _clock = owner.Clock;
        _lastActivity = _openedAt = Now();
        _rateWindow = new DataRateWindow(_openedAt);
    }

    /// <summary>Gets the client's address.</summary>
    public IPAddress? RemoteAddress => (_remoteEndPoint as IPEndPoint)?.Address;

    /// <summary>Gets the pooled args' slot.</summary>
    public PoolSlot<SocketAsyncEventArgs> Slot { get; }

    /// <summary>Gets the owner's clock at the last completed receive or send.</summary>
    public long LastActivity => Volatile.Read(ref _lastActivity);

    /// <summary>Gets whether the server has begun to close the connection (stop, idle, evicted or aborted).</summary>
    public bool IsClosing => Volatile.Read(ref _closeRequest) != NoCloseRequest;

    /// <summary>Runs the connection's receive/send loop until it closes; its failures are logged, never thrown.</summary>
    public void Execute() => _ = RunAsync();

    /// <summary>Stop: nothing more is read; what was read is still echoed, then the stream ends and the connection
    /// closes when the client does (or when the grace period ends).</summary>
    public void StopGracefully()
    {
        if (Interlocked.CompareExchange(ref _closeRequest, StopRequested, NoCloseRequest) == NoCloseRequest
            && Interlocked.CompareExchange(ref _phase, Ended, Waiting) == Waiting)
        {
            // The loop waits for data and owes nothing: end the stream now. The client's close, or its next
            // data, wakes the loop, which then discards what comes.
            Shutdown(SocketShutdown.Send);
        }
    }

    /// <summary>Idle sweep: closes the connection, unless it is closing already.</summary>
    public void CloseIdle()
    {
        if (Interlocked.CompareExchange(ref _closeRequest, IdleClose, NoCloseRequest) == NoCloseRequest)
        {
            Shutdown(SocketShutdown.Both);
        }
    }

    /// <summary>Sweep only: whether the connection receives less than <paramref name="minDataRate"/> bytes a second
    /// (see <see cref="DataRateWindow.IsSlow"/>).</summary>
    public bool IsSlow(long now, long windowMs, int minDataRate, long judgedAfterMs)
        => _rateWindow.IsSlow(now, Volatile.Read(ref _bytesReceived), windowMs, minDataRate, judgedAfterMs);

    /// <summary>Closes a slow connection to make room for a waiting client, unless it is closing already.</summary>
    public void Evict()
    {
        if (Interlocked.CompareExchange(ref _closeRequest, Evicted, NoCloseRequest) == NoCloseRequest)
        {
            _owner.Count.Evicted();
            Shutdown(SocketShutdown.Both);
        }
    }

    /// <summary>End of the stop grace period: closes the socket, whatever the connection is doing.</summary>
    public void Abort()
    {
        Volatile.Write(ref _closeRequest, Aborted);
        _socket.Dispose();
    }

    private async Task RunAsync()
    {
        _owner.Logger.ConnectionOpened(_id, _remoteEndPoint);

        SocketError error = SocketError.Success;
        try
        {
            Pool<byte[]> buffers = _owner.Buffers;
            while (true)
            {
                if (!EnterWaiting())
                {
                    error = await DiscardUntilEndAsync(buffers).ConfigureAwait(false);
                    break;
                }

                // Wait for data with no buffer (a zero-byte receive): an idle connection holds none.
                _args.SetBuffer(null, 0, 0);
                await _args.ReceiveAsync(_socket).ConfigureAwait(false);
                error = _args.SocketError;
                if (error != SocketError.Success)
                {
                    break;
                }

                if (Interlocked.CompareExchange(ref _phase, Echoing, Waiting) != Waiting)
                {
                    // The stop ended the stream while this waited: what came since is not owed.
                    error = await DiscardUntilEndAsync(buffers).ConfigureAwait(false);
                    break;
                }

                bool open;
                (open, error) = await EchoWhileDataAsync(buffers).ConfigureAwait(false);
                if (!open)
                {
                    break;
                }
            }
        }
        catch (ObjectDisposedException)
        {
            error = SocketError.OperationAborted;
        }
        catch (Exception ex)
        {
            error = SocketError.SocketError;
            if (_owner.Logger.IsEnabled(LogLevel.Warning) && _owner.ConnectionWarnings.TryAcquire(out long suppressed))
            {
                _owner.Logger.ConnectionFailed(ex, _id, _remoteEndPoint, LogRateLimiter.SuppressedNote(suppressed));
            }
        }
        finally
        {
            Close(error);
        }
    }

    /// <summary>Publishes that the loop is about to wait for data, owing nothing, then looks for a stop (see the
    /// remarks on the class): if there is one, ends the stream unless the stop just did.</summary>
    /// <returns>Whether to wait for data; <see langword="false"/> once the stream is ended.</returns>
    private bool EnterWaiting()
    {
        Interlocked.Exchange(ref _phase, Waiting);
        if (Volatile.Read(ref _closeRequest) != StopRequested)
        {
            return true;
        }

        if (Interlocked.CompareExchange(ref _phase, Ended, Waiting) == Waiting)
        {
            Shutdown(SocketShutdown.Send);
        }

        return false;
    }

    /// <summary>
    /// Takes what has arrived into a buffer borrowed from <paramref name="buffers"/> and echoes it, for as long as each
    /// read fills the buffer (more is likely waiting); returns when nothing more is there, at end of stream, on an
    /// error, or before the first read after a stop began.
    /// </summary>
    /// <returns>Whether the connection is still open, and the last socket error.</returns>
    /// <remarks>
    /// The reads never wait: a zero-byte receive can report data that is gone or never came (its
    /// readiness can be stale), and a read that waited would hold the buffer while the connection idles.
    /// Bytes count as echoed as each send hands them to the kernel.
    /// </remarks>
    private async ValueTask<(bool Open, SocketError Error)> EchoWhileDataAsync(Pool<byte[]> buffers)
    {
        // Never waits: a connection holds at most one buffer, and there are as many as connections.
        PoolSlot<byte[]> borrowed = buffers.TakeSlot();
        byte[] buffer = borrowed.Object;
        try
        {
            while (Volatile.Read(ref _closeRequest) != StopRequested)
            {
                int received = _socket.Receive(buffer, SocketFlags.None, out SocketError error);
                if (error == SocketError.WouldBlock)
                {
                    return (true, SocketError.Success);
                }

                if (error != SocketError.Success || received == 0)
                {
                    return (false, error);
                }

                _args.SetBuffer(buffer, 0, received);
                Volatile.Write(ref _lastActivity, Now());
                Volatile.Write(ref _bytesReceived, _bytesReceived + received);
                for (int sent = 0; sent < received; sent += _args.BytesTransferred)
                {
                    _args.SetBuffer(sent, received - sent);
                    await _args.SendAsync(_socket).ConfigureAwait(false);
                    if (_args.SocketError != SocketError.Success)
                    {
                        return (false, _args.SocketError);
                    }

                    _owner.Count.BytesEchoed(_args.BytesTransferred);
                    Volatile.Write(ref _lastActivity, Now());
                }

                _owner.Count.MessageEchoed();
                _owner.Logger.ConnectionEchoed(_id, received);
                if (received < buffer.Length)
                {
                    return (true, SocketError.Success);
                }
            }

            // Stopping: stop reading; back in the loop, the stream ends.
            return (true, SocketError.Success);
        }
        finally
        {
            _args.SetBuffer(null, 0, 0);
            buffers.Release(borrowed);
        }
    }

    /// <summary>After the stream has ended for a stop: reads and drops what the client still sends, until it closes
    /// (or the end of the grace period closes the socket).</summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, else the error.</returns>
    private async ValueTask<SocketError> DiscardUntilEndAsync(Pool<byte[]> buffers)
    {
        while (true)
        {
            _args.SetBuffer(null, 0, 0);
            await _args.ReceiveAsync(_socket).ConfigureAwait(false);
            if (_args.SocketError != SocketError.Success)
            {
                return _args.SocketError;
            }

            PoolSlot<byte[]> buffer = buffers.TakeSlot();
            try
            {
                while (true)
                {
                    int received = _socket.Receive(buffer.Object, SocketFlags.None, out SocketError error);
                    if (error == SocketError.WouldBlock)
                    {
                        break;
                    }

                    if (error != SocketError.Success || received == 0)
                    {
                        return error;
                    }
                }
            }
            finally
            {
                buffers.Release(buffer);
            }
        }
    }

    private void Close(SocketError error)
    {
        try
        {
            ReportEnd(error);
        }
        finally
        {
            // Whatever the log line did (a logger may throw), the socket closes and the args goes back.
            _socket.Dispose();
            _owner.OnConnectionClosed(this, TimeSpan.FromMilliseconds(Now() - _openedAt));
        }
    }

    /// <summary>Ends a graceful close with end of stream to the client, counts any other close as a drop, and logs
    /// how the connection ended.</summary>
    private void ReportEnd(SocketError error)
    {
        int request = Volatile.Read(ref _closeRequest);
        bool graceful = error == SocketError.Success && request is not (IdleClose or Evicted);
        if (graceful)
        {
            // End of stream from the client: all it sent has been echoed (or, stopping, dropped); say we are done too.
            Shutdown(SocketShutdown.Send);
            _owner.Logger.ConnectionClosed(_id, _remoteEndPoint);
        }
        else
        {
            _owner.Count.Dropped();
            if (request == IdleClose)
            {
                _owner.Logger.ConnectionIdleClosed(_id, _remoteEndPoint);
            }
            else if (request == Evicted)
            {
                _owner.Logger.ConnectionEvicted(_id, _remoteEndPoint);
            }
            else if (request == Aborted)
            {
                _owner.Logger.ConnectionAborted(_id, _remoteEndPoint);
            }
            else if (error is SocketError.ConnectionReset or SocketError.ConnectionAborted or SocketError.Shutdown
                or SocketError.OperationAborted or SocketError.TimedOut or SocketError.NotConnected)
            {
                _owner.Logger.ConnectionLost(_id, _remoteEndPoint, error);
            }
            else if (error != SocketError.SocketError)
            {
                if (_owner.Logger.IsEnabled(LogLevel.Warning) && _owner.ConnectionWarnings.TryAcquire(out long suppressed))
                {
                    _owner.Logger.ConnectionSocketFailed(_id, _remoteEndPoint, error, LogRateLimiter.SuppressedNote(suppressed));
                }
            }
        }
    }

    private long Now() => _clock is null ? Environment.TickCount64 : _clock();

    private void Shutdown(SocketShutdown how)
    {
        try
        {
            _socket.Shutdown(how);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed or reset: nothing left to shut down.
        }
    }
}
