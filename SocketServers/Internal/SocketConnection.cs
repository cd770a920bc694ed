using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>One accepted connection: its transport, its pooled args, and the parts that run it.</summary>
/// <remarks>
/// <see cref="ConnectionInput"/> is the loop that feeds the handler, <see cref="ConnectionOutput"/> its writes and sends,
/// <see cref="CloseHandshake"/> who ends the stream when the server closes it, <see cref="ConnectionActivity"/> what the
/// idle and slow sweep reads, and <see cref="ConnectionTransport"/> all the byte I/O, plaintext or TLS. The loop owns the
/// transport, the args and the buffers; other threads (the sweep, the stop, a handler's <see cref="Close"/>) only shut
/// the socket down or close it, which makes a pending operation complete. The args goes back to the pool only after the
/// loop has seen its last operation complete.
/// </remarks>
internal sealed class SocketConnection : TcpConnection, IThreadPoolWorkItem
{
    // How long a connection waiting for data must have been quiet (nothing received, sent or handled) for a stop to close
    // it at once. Such a client, an idle nc, is not in the middle of sending, and has had time to read what it was sent,
    // so closing cannot reset replies it has yet to read; nor does it hold the stop until its grace period ends. A client
    // active more recently may be between two writes of a stream: it gets end of stream and the grace period to close.
    private const long QuietBeforeStopMs = 1000;

    private readonly ITcpConnectionOwner _owner;
    private readonly long _id;
    private readonly ConnectionTransport _transport;
    private readonly CloseHandshake _handshake = new();
    private readonly ConnectionActivity _activity;
    private readonly ConnectionInput _input;

    // Made when a handler first asks for ConnectionClosed, published with a full fence; cancelled by whichever of the
    // cut-off (or close) and the publication comes second, as each reads the other after its own write.
    private CancellationTokenSource? _connectionClosed;

    // Set once the loop is over; writes then throw.
    private bool _closed;

    /// <summary>Sets up a connection on an accepted socket; <see cref="Execute"/> runs it.</summary>
    /// <param name="owner">The server that accepted it.</param>
    /// <param name="slot">The pooled args' slot, which the owner takes back when the connection has closed.</param>
    /// <param name="args">The pooled args the connection's socket operations run on.</param>
    /// <param name="socket">The accepted socket; the connection owns it from now on.</param>
    /// <param name="id">The connection's number in log lines.</param>
    /// <param name="remoteEndPoint">The client's address as the server reports it (a PROXY header's);
    /// <see langword="null"/> for the socket's.</param>
    /// <param name="tls">The authenticated TLS stream over <paramref name="socket"/>, which the connection owns from now
    /// on; <see langword="null"/> for plaintext.</param>
    public SocketConnection(ITcpConnectionOwner owner, PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, long id, EndPoint? remoteEndPoint = null, SslStream? tls = null)
    {
        _owner = owner;
        Slot = slot;
        _id = id;
        _transport = tls is null ? new SocketTransport(socket, remoteEndPoint, args) : new TlsTransport(socket, remoteEndPoint, tls);
        _activity = new ConnectionActivity(owner.Clock);
        _input = new ConnectionInput(this, owner, _transport, _handshake, _activity);
        Output = new ConnectionOutput(owner, _transport, _activity, _input);
    }

    /// <inheritdoc/>
    public override long Id => _id;

    /// <inheritdoc/>
    public override EndPoint? RemoteEndPoint => _transport.RemoteEndPoint;

    /// <inheritdoc/>
    public override int BufferSize => _owner.LargeBuffers.BufferSize;

    /// <inheritdoc/>
    public override int MaxMessageSize => _owner.LargeBuffers.MaxMessageSize;

    /// <inheritdoc/>
    public override CancellationToken ConnectionClosed
    {
        get
        {
            if (Volatile.Read(ref _connectionClosed) is not { } source)
            {
                source = new CancellationTokenSource();
                source = Interlocked.CompareExchange(ref _connectionClosed, source, null) ?? source;
                if (_handshake.IsCutOff || IsClosed)
                {
                    _ = source.CancelAsync();
                }
            }

            return source.Token;
        }
    }

    /// <summary>Gets the client's address.</summary>
    public IPAddress? RemoteAddress => (RemoteEndPoint as IPEndPoint)?.Address;

    /// <summary>Gets the pooled args' slot.</summary>
    public PoolSlot<SocketAsyncEventArgs> Slot { get; }

    /// <summary>Gets what the idle and slow sweep reads.</summary>
    public ConnectionActivity Activity => _activity;

    /// <summary>Gets the owner's clock at the last completed receive or send.</summary>
    public long LastActivity => _activity.LastActivity;

    /// <summary>Gets whether the server has begun to close the connection (stop, idle, evicted, closed by the handler or
    /// aborted).</summary>
    public bool IsClosing => _handshake.IsClosing;

    /// <summary>Gets whether a handler's call is at work for the connection (not waiting on a send): the server owes the
    /// client a reply, so the connection is neither idle nor slow.</summary>
    public bool IsHandlerAtWork => _activity.IsHandlerAtWork;

    /// <summary>
    /// Sweep only: whether input has arrived that the loop has not read yet while nothing holds it up but its turn (a
    /// connection not served yet, or whose wake-up waits for a core, as in a burst): the server owes the client a reply,
    /// so the connection is neither idle nor slow. A send waiting for the client to read, or a close under way, is not
    /// such a hold-up: input behind it is not read anyway, and a client that never reads cannot shield itself by
    /// sending. One ioctl (FIONREAD), asked only of a connection about to be closed.
    /// </summary>
    public bool HasUnreadInput => !_activity.IsSending && !IsClosing && _transport.UnreadBytes() > 0;

    /// <summary>Gets the output, for the loop.</summary>
    internal ConnectionOutput Output { get; }

    /// <summary>Gets whether the loop is over.</summary>
    internal bool IsClosed => Volatile.Read(ref _closed);

    /// <summary>Runs the connection's loop until it closes; its failures are logged, never thrown.</summary>
    public void Execute() => _ = RunAsync();

    /// <summary>Stop: nothing more is read; what was read is still handled and sent, then the stream ends and the
    /// connection closes when the client does (or when the grace period ends); one that waits for data owing nothing,
    /// quiet for a second with nothing unread, closes at once.</summary>
    public void StopGracefully() => RequestEnd(CloseRequest.Stop);

    /// <inheritdoc/>
    public override void Close() => RequestEnd(CloseRequest.HandlerClose);

    /// <summary>Idle sweep: closes the connection, unless the server is closing it already (a handler's close still
    /// waiting for the client to close is cut short).</summary>
    public void CloseIdle()
    {
        if (_handshake.TryRequestIdleClose())
        {
            CutOff();
        }
    }

    /// <summary>Sweep only: see <see cref="ConnectionActivity.RestartRateWindow"/>.</summary>
    public void RestartRateWindow(long now) => _activity.RestartRateWindow(now);

    /// <summary>Sweep only: see <see cref="ConnectionActivity.NoteSendQueueDrain"/>.</summary>
    public void NoteSendQueueDrain(long now) => _activity.NoteSendQueueDrain(now, _transport.Socket);

    /// <summary>Sweep only: see <see cref="ConnectionActivity.IsSlow"/>.</summary>
    public bool IsSlow(long now, long windowMs, int minDataRate, long judgedAfterMs) => _activity.IsSlow(now, windowMs, minDataRate, judgedAfterMs);

    /// <summary>Sweep only: whether the linger after the handler's close is over (see <see cref="EndLinger"/>).</summary>
    public bool IsLingerDue(long now) => _input.IsLingerDue(now);

    /// <summary>Sweep only: ends the linger after the handler's close, resetting the connection: the client has had its
    /// last reply, and a client the server is done with holds its slot no longer.</summary>
    public void EndLinger() => _input.EndLinger();

    /// <summary>Closes a slow connection to make room for a waiting client, unless it is closing already.</summary>
    public void Evict()
    {
        if (_handshake.TryRequest(CloseRequest.Evicted))
        {
            _owner.Count.Evicted();
            CutOff();
        }
    }

    /// <summary>End of the stop grace period: closes the socket, whatever the connection is doing.</summary>
    public void Abort()
    {
        _handshake.Abort();

        // The socket only: the loop's operation on the TLS stream completes with an error, and the loop disposes the stream.
        _transport.Socket.Dispose();
        _input.EndLinger();
        CancelConnectionClosed();
    }

    /// <inheritdoc/>
    public override ValueTask WriteAsync(ReadOnlyMemory<byte> data)
    {
        ObjectDisposedException.ThrowIf(_closed, this);
        return Output.WriteAsync(data);
    }

    /// <inheritdoc/>
    public override ValueTask WriteOwnedAsync(ReadOnlyMemory<byte> data)
    {
        ObjectDisposedException.ThrowIf(_closed, this);
        return Output.WriteOwnedAsync(data);
    }

    /// <inheritdoc/>
    public override ValueTask FlushAsync()
    {
        ObjectDisposedException.ThrowIf(_closed, this);
        return Output.FlushAsync();
    }

    /// <inheritdoc/>
    public override string ToString() => $"TCP connection {_id} from {RemoteEndPoint}";

    /// <summary>
    /// Ends the stream after what was sent; after the handler's close, the linger begins. On a stop, a connection that is
    /// quiet (nothing moved for <see cref="QuietBeforeStopMs"/>, nothing unread) has its receive side shut too, which
    /// wakes the loop to close it as at the client's end of stream. Called once, by the side the handshake chose.
    /// </summary>
    internal void EndStream()
    {
        CloseRequest request = _handshake.Request;
        bool quiet = request == CloseRequest.Stop && _activity.IsQuietFor(QuietBeforeStopMs) && _transport.UnreadBytes() == 0;
        _transport.EndStream(quiet ? SocketShutdown.Both : SocketShutdown.Send);
        if (request == CloseRequest.HandlerClose)
        {
            _input.StartLinger();
        }
    }

    /// <summary>Asks the loop to end the stream gracefully; ends it here if the loop waits owing nothing.</summary>
    private void RequestEnd(CloseRequest request)
    {
        if (_handshake.RequestEnd(request))
        {
            // The client's close, or its next data, wakes the loop, which then discards what comes (a stop) or
            // lingers (a close), and so does the linger's end.
            EndStream();
        }
    }

    private async Task RunAsync()
    {
        _owner.Logger.ConnectionOpened(_id, RemoteEndPoint);
        SocketError error = SocketError.Success;
        try
        {
            _activity.BeginHandlerCall();
            await _owner.Handler.OnConnectedAsync(this).ConfigureAwait(false);
            _activity.EndHandlerCall();
            error = await Output.FlushAndReleaseAsync().ConfigureAwait(false);
            if (error == SocketError.Success)
            {
                error = await _input.ServeAsync().ConfigureAwait(false);
            }
        }
        catch (ObjectDisposedException) when (_handshake.Request is CloseRequest.Aborted or CloseRequest.IdleClose or CloseRequest.Evicted)
        {
            // The end of the stop grace period, or a cut-off mid-reply, closed the socket under the loop.
            error = SocketError.OperationAborted;
        }
        catch (IOException) when (Output.WriteFailure != SocketError.Success)
        {
            // A write the client's reset or a failure cut short, thrown through the handler.
            error = Output.WriteFailure;
        }
        catch (OperationCanceledException) when (_handshake.IsCutOff || IsClosed)
        {
            // The handler gave its work up when the server cut the connection off (ConnectionClosed), as it should.
            error = SocketError.OperationAborted;
        }
        catch (Exception ex)
        {
            error = SocketError.SocketError;
            _owner.OnHandlerFailed(ex);
            if (_owner.Logger.IsEnabled(LogLevel.Warning) && _owner.ConnectionWarnings.TryAcquire(out long suppressed))
            {
                _owner.Logger.ConnectionFailed(ex, _id, RemoteEndPoint, LogRateLimiter.SuppressedNote(suppressed));
            }
        }
        finally
        {
            Finish(error);
        }
    }

    private void Finish(SocketError error)
    {
        try
        {
            ReportEnd(error);
        }
        finally
        {
            // Whatever the log line or the handler did (either may throw), the socket closes, the buffers and the args go back.
            Volatile.Write(ref _closed, true);
            Interlocked.MemoryBarrier();
            CancelConnectionClosed();
            Output.Release();
            _transport.Dispose();
            _input.ReleaseBuffer();
            try
            {
                _owner.Handler.OnClosed(this);
            }
            catch (Exception ex)
            {
                _owner.OnHandlerFailed(ex);
                _owner.Logger.ConnectionFailed(ex, _id, RemoteEndPoint, string.Empty);
            }
            finally
            {
                _owner.OnConnectionClosed(this, TimeSpan.FromMilliseconds(_activity.Now - _activity.OpenedAt));
            }
        }
    }

    /// <summary>Ends a graceful close with end of stream to the client, counts any other close as a drop, and logs
    /// how the connection ended.</summary>
    private void ReportEnd(SocketError error)
    {
        // A write that failed ended the connection, even if the handler caught its exception and returned.
        if (error == SocketError.Success)
        {
            error = Output.WriteFailure;
        }

        CloseRequest request = _handshake.Request;
        if (request == CloseRequest.HandlerClose && error != SocketError.Success && _input.LingerEnded)
        {
            // The linger's reset, whichever wait of the loop met it.
            error = SocketError.TimedOut;
        }

        if (error == SocketError.Success && request is not (CloseRequest.IdleClose or CloseRequest.Evicted))
        {
            // End of stream from the client: all it sent has been echoed (or, stopping, dropped); say we are done too.
            _transport.EndStream(SocketShutdown.Send);
            _owner.Logger.ConnectionClosed(_id, RemoteEndPoint);
            return;
        }

        _owner.Count.Dropped();
        LogDrop(request, error);
    }

    private void LogDrop(CloseRequest request, SocketError error)
    {
        ILogger logger = _owner.Logger;
        switch (request)
        {
            case CloseRequest.IdleClose:
                logger.ConnectionIdleClosed(_id, RemoteEndPoint);
                break;
            case CloseRequest.Evicted:
                logger.ConnectionEvicted(_id, RemoteEndPoint);
                break;
            case CloseRequest.Aborted:
                logger.ConnectionAborted(_id, RemoteEndPoint);
                break;
            case CloseRequest.HandlerClose when error == SocketError.TimedOut:
                logger.ConnectionLingerReset(_id, RemoteEndPoint);
                break;
            default:
                if (error is SocketError.ConnectionReset or SocketError.ConnectionAborted or SocketError.Shutdown
                    or SocketError.OperationAborted or SocketError.TimedOut or SocketError.NotConnected)
                {
                    logger.ConnectionLost(_id, RemoteEndPoint, error);
                }
                else if (error != SocketError.SocketError && logger.IsEnabled(LogLevel.Warning) && _owner.ConnectionWarnings.TryAcquire(out long suppressed))
                {
                    logger.ConnectionSocketFailed(_id, RemoteEndPoint, error, LogRateLimiter.SuppressedNote(suppressed));
                }

                break;
        }
    }

    /// <summary>Cancels <see cref="ConnectionClosed"/> if a handler has asked for it; its callbacks run on the thread pool,
    /// not on the thread that cuts the connection off.</summary>
    private void CancelConnectionClosed() => _ = Volatile.Read(ref _connectionClosed)?.CancelAsync();

    /// <summary>Idle close or eviction: ends the connection and cancels the handler's work. Cut off mid-reply, it resets
    /// the connection at once: a shut send side would end the stream after the part the kernel holds, and the client
    /// would take a cut reply for a whole one. The loop then meets the closed socket as after the stop's abort.</summary>
    private void CutOff()
    {
        if (_activity.IsSending || _activity.InHandlerCall)
        {
            _transport.Reset();
        }
        else
        {
            _transport.Shutdown(SocketShutdown.Both);
        }

        _input.EndLinger();
        CancelConnectionClosed();
    }
}
