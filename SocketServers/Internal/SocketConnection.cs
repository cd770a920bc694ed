using System.Diagnostics;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using Microsoft.Extensions.Logging;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>One accepted connection: its socket, its pooled args, its buffers and the loop that feeds its handler.</summary>
/// <remarks>
/// The loop owns the socket, the args and the buffers; other threads (the idle sweep, the stop, a handler's
/// <see cref="Close"/>) only shut the socket down or dispose it, which makes a pending operation complete. The args goes
/// back to the pool only after the loop has seen its last operation complete. A graceful end (a stop, or the handler's
/// close) reads nothing more, sends what was written and ends the stream. On a stop the loop then drops what the client
/// still sends until it closes (or the grace period ends): closing with unread input would reset the connection and
/// destroy replies not read yet (a stop closes a quiet connection at once instead, see <see cref="QuietBeforeStopMs"/>). After the handler's close it lingers instead (see <see cref="LingerAsync"/>): it reads
/// nothing, waits at most <see cref="s_linger"/> for the client to close, then resets the connection, so that a client
/// the server is done with holds its slot no longer than that. Who ends the stream is decided by the handshake on
/// <see cref="_phase"/>, stated at that field.
/// </remarks>
internal sealed class SocketConnection : TcpConnection, IThreadPoolWorkItem
{
    private const int NoCloseRequest = 0;
    private const int StopRequested = 1;
    private const int IdleClose = 2;
    private const int Aborted = 3;
    private const int Evicted = 4;
    private const int HandlerClose = 5;

    // How long a connection the handler closed waits for the client to close before the server resets it: ample for the
    // last reply to reach the client, short enough that such connections cannot keep clients waiting for a slot.
    private static readonly TimeSpan s_linger = TimeSpan.FromSeconds(1);

    // How long a connection waiting for data must have been quiet (nothing received, sent or handled) for a stop to close
    // it at once. Such a client, an idle nc, is not in the middle of sending, and has had time to read what it was sent,
    // so closing cannot reset replies it has yet to read; nor does it hold the stop until its grace period ends. A client
    // active more recently may be between two writes of a stream: it gets end of stream and the grace period to close.
    private const long QuietBeforeStopMs = 1000;

    // The most a single send hands the kernel, so that a long reply's progress counts as activity and toward the data
    // rate as it goes, not only once all of it is sent.
    private const int MaxSendChunk = 64 * 1024;

    // _phase: handling what it reads (the loop sees a close request before its next read); waiting for data with nothing
    // owed (the requester may end the stream itself); the stream ended, input discarded.
    private const int Handling = 0;
    private const int Waiting = 1;
    private const int Ended = 2;

    private readonly ITcpConnectionOwner _owner;
    private readonly TcpConnectionHandler _handler;
    private readonly PooledSocketArgs _args;
    private readonly Socket _socket;
    private readonly long _id;
    private readonly EndPoint? _remoteEndPoint;

    // The authenticated TLS stream over the socket, or null; disposed when the connection finishes.
    private readonly SslStream? _tls;

    // The owner's clock (milliseconds, monotonic); null for Environment.TickCount64, read directly.
    private readonly Func<long>? _clock;

    // The clock at the last completed receive or send, the end of a handler's call or the start of a send; read by the
    // idle sweep.
    private long _lastActivity;

    // Written by the loop, read by the sweep: 1 while a handler's call runs, and while a send is under way. A handler
    // at work on a reply (awaiting a backend) makes its connection busy, neither idle nor slow; one whose send waits
    // for a client that does not read does not. Leaving that work (the call's end, a send's start) counts as activity.
    private int _inHandlerCall;
    private int _sending;

    // The clock when accepted, for the connection-duration histogram.
    private readonly long _openedAt;

    // Bytes received and sent so far, as the slow-connection sweep judges a connection; written by the loop, read by
    // the sweep. A connection streaming a reply is not slow, whatever it receives.
    private long _bytesMoved;

    // The sweep's alone: what the kernel's send queue has drained while a send waited for room (counted as moved, as
    // the send's completion later counts the same bytes, so a reader may be judged up to twice as fast), and the bytes
    // that queue held at the last sweep, or -1 when no send waited.
    private long _bytesDrained;
    private int _sendQueueAtSweep = -1;

    // The sweep's alone: the data rate over the current and the last window. A mutable struct updated in
    // place, so never readonly: a readonly field would hand the sweep a copy and the window would never move.
    private DataRateWindow _rateWindow;

    // Why the server closes this connection, if it does: NoCloseRequest until the first of stop, idle sweep, eviction,
    // the handler's close or abort sets it (Aborted overrides the others; an idle close overrides the handler's).
    private int _closeRequest;

    // Handling, Waiting or Ended. Only the loop moves Handling to Waiting and back; Waiting to Ended, by the loop
    // or a close request, happens once and is final. The handshake that decides who ends the stream: the loop publishes
    // Waiting and then reads the close request; the requester publishes its request and then moves Waiting to Ended;
    // each with a full fence, so at least one sees the other, and the one compare-and-swap that wins shuts the send side
    // down. A loop waiting with part of a message stays Handling and sets _waitingWithPartial instead.
    private int _phase;

    // 1 while the loop waits for data holding part of a message (so in Handling); a close request then wakes it (cancels
    // _partialWait), and the loop ends the stream itself.
    private int _waitingWithPartial;

    // Made by the loop before its first wait holding part of a message, and published by setting _waitingWithPartial.
    // Not a shutdown of the receive side: after one, reads see an end of stream at once, so the loop could no longer
    // wait for the client's close, and closing before it would reset what the client still sends.
    private CancellationTokenSource? _partialWait;

    // The loop's alone. The receive buffer, held while data is there and while part of a message waits for the rest;
    // _pending bytes at its start are received and not consumed.
    private PoolSlot<byte[]>? _receive;
    private int _pending;

    // The loop's alone. The send buffer, held while written bytes wait to be sent: _sendLength of them.
    private PoolSlot<byte[]>? _send;
    private int _sendLength;

    // The loop's alone. Written bytes that lie in the receive buffer, sent from there rather than copied: _directLength
    // of them from _directOffset. Never both these and _sendLength; the loop sends them before it moves or gives back
    // the receive buffer.
    private int _directOffset;
    private int _directLength;

    // Set once the loop is over; writes then throw.
    private bool _closed;

    // The linger's end: made, by whichever side ends the stream after the handler's close (the loop, or RequestEnd on
    // the closing thread), or by the loop that finds it missing, and published once; its cancellation resets the
    // socket. Disposed by Finish; one published after that is left to its timer, whose reset then meets a closed socket.
    private CancellationTokenSource? _lingerEnd;

    // Made when a handler first asks for ConnectionClosed, published with a full fence; cancelled by whichever of the
    // cut-off (or close) and the publication comes second, as each reads the other after its own write.
    private CancellationTokenSource? _connectionClosed;

    // The loop's alone: the error of a write that failed in a handler's call, which the IOException thrown through the
    // handler reports; any other exception from the handler is the handler's own failure.
    private SocketError _writeFailure;

    /// <summary>Sets up a connection on an accepted socket; <see cref="Execute"/> runs it.</summary>
    /// <param name="owner">The server that accepted it.</param>
    /// <param name="slot">The pooled args' slot, which the owner takes back when the connection has closed.</param>
    /// <param name="args">The pooled args the connection's socket operations run on.</param>
    /// <param name="socket">The accepted socket; the connection owns it from now on.</param>
    /// <param name="id">The connection's number in log lines.</param>
    /// <param name="remoteEndPoint">The client's address to report (a PROXY header's); <see langword="null"/> for the socket's.</param>
    /// <param name="tls">The stream authenticated over <paramref name="socket"/>, or <see langword="null"/>; the connection owns it.</param>
    public SocketConnection(ITcpConnectionOwner owner, PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, long id, EndPoint? remoteEndPoint, SslStream? tls)
    {
        _owner = owner;
        _handler = owner.Handler;
        Slot = slot;
        _args = args;
        _socket = socket;
        _id = id;
        _remoteEndPoint = remoteEndPoint ?? socket.RemoteEndPoint;
        _tls = tls;

        // Reads with a buffer never wait (see HandleWhileDataAsync); only the zero-byte receive does.
        socket.Blocking = false;
        _clock = owner.Clock;
        _lastActivity = _openedAt = Now();
        _rateWindow = new DataRateWindow(_openedAt);
    }

    /// <inheritdoc/>
    public override long Id => _id;

    /// <inheritdoc/>
    public override EndPoint? RemoteEndPoint => _remoteEndPoint;

    /// <inheritdoc/>
    public override CancellationToken ConnectionClosed
    {
        get
        {
            if (Volatile.Read(ref _connectionClosed) is not { } source)
            {
                source = new CancellationTokenSource();
                source = Interlocked.CompareExchange(ref _connectionClosed, source, null) ?? source;
                if (IsCutOffOrClosed)
                {
                    _ = source.CancelAsync();
                }
            }

            return source.Token;
        }
    }

    /// <summary>Gets the client's address.</summary>
    public IPAddress? RemoteAddress => (_remoteEndPoint as IPEndPoint)?.Address;

    /// <summary>Gets the pooled args' slot.</summary>
    public PoolSlot<SocketAsyncEventArgs> Slot { get; }

    /// <summary>Gets the owner's clock at the last completed receive or send.</summary>
    public long LastActivity => Volatile.Read(ref _lastActivity);

    private bool IsCutOffOrClosed => Volatile.Read(ref _closeRequest) is IdleClose or Evicted or Aborted || Volatile.Read(ref _closed);

    /// <summary>Gets whether the server has begun to close the connection (stop, idle, evicted, closed by the handler or
    /// aborted).</summary>
    public bool IsClosing => Volatile.Read(ref _closeRequest) != NoCloseRequest;

    /// <summary>Runs the connection's loop until it closes; its failures are logged, never thrown.</summary>
    public void Execute() => _ = RunAsync();

    /// <summary>Stop: nothing more is read; what was read is still handled and sent, then the stream ends and the
    /// connection closes when the client does (or when the grace period ends); one that waits for data owing nothing,
    /// quiet for a second with nothing unread, closes at once.</summary>
    public void StopGracefully() => RequestEnd(StopRequested);

    /// <inheritdoc/>
    public override void Close() => RequestEnd(HandlerClose);

    /// <summary>Idle sweep: closes the connection, unless the server is closing it already (a handler's close still
    /// waiting for the client to close is cut short).</summary>
    public void CloseIdle()
    {
        if (Interlocked.CompareExchange(ref _closeRequest, IdleClose, NoCloseRequest) == NoCloseRequest
            || Interlocked.CompareExchange(ref _closeRequest, IdleClose, HandlerClose) == HandlerClose)
        {
            CutOff();
        }
    }

    /// <summary>Sweep only: restarts the data-rate window while the handler is at work, so that the connection is judged
    /// afresh, by what it moves from the end of that work on.</summary>
    public void RestartRateWindow(long now) => _rateWindow.Restart(now, Volatile.Read(ref _bytesMoved) + _bytesDrained);

    /// <summary>
    /// Sweep only: while a send waits for room in the kernel's queue, counts the queue's drain since the last sweep as
    /// bytes moved and as activity, so that a client reading a long reply steadily is neither idle nor slow.
    /// </summary>
    public void NoteSendQueueDrain(long now)
    {
        int queued = Volatile.Read(ref _sending) == 1 && KernelSendQueue.Bytes(_socket) is { } bytes ? bytes : -1;
        if (queued >= 0 && _sendQueueAtSweep > queued)
        {
            _bytesDrained += _sendQueueAtSweep - queued;
            Volatile.Write(ref _lastActivity, Math.Max(now, Volatile.Read(ref _lastActivity)));
        }

        _sendQueueAtSweep = queued;
    }

    /// <summary>Gets whether a handler's call is at work for the connection (not waiting on a send): the server owes the
    /// client a reply, so the connection is neither idle nor slow.</summary>
    public bool IsHandlerAtWork => Volatile.Read(ref _inHandlerCall) == 1 && Volatile.Read(ref _sending) == 0;

    /// <summary>
    /// Sweep only: whether input has arrived that the loop has not read yet while nothing holds it up but its turn (a
    /// connection not served yet, or whose wake-up waits for a core, as in a burst): the server owes the client a reply,
    /// so the connection is neither idle nor slow. A send waiting for the client to read, or a close under way, is not
    /// such a hold-up: input behind it is not read anyway, and a client that never reads cannot shield itself by
    /// sending. One ioctl (FIONREAD), asked only of a connection about to be closed.
    /// </summary>
    public bool HasUnreadInput
    {
        get
        {
            if (Volatile.Read(ref _sending) == 1 || IsClosing)
            {
                return false;
            }

            try
            {
                return _socket.Available > 0;
            }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
            {
                // Closed meanwhile: nothing waits.
                return false;
            }
        }
    }

    /// <summary>Sweep only: whether the connection receives and sends less than <paramref name="minDataRate"/> bytes a second
    /// (see <see cref="DataRateWindow.IsSlow"/>).</summary>
    public bool IsSlow(long now, long windowMs, int minDataRate, long judgedAfterMs)
        => _rateWindow.IsSlow(now, Volatile.Read(ref _bytesMoved) + _bytesDrained, windowMs, minDataRate, judgedAfterMs);

    /// <summary>Closes a slow connection to make room for a waiting client, unless it is closing already.</summary>
    public void Evict()
    {
        if (Interlocked.CompareExchange(ref _closeRequest, Evicted, NoCloseRequest) == NoCloseRequest)
        {
            _owner.Count.Evicted();
            CutOff();
        }
    }

    /// <summary>End of the stop grace period: closes the socket, whatever the connection is doing.</summary>
    public void Abort()
    {
        Interlocked.Exchange(ref _closeRequest, Aborted);
        _socket.Dispose();
        EndLinger();
        CancelConnectionClosed();
    }

    /// <inheritdoc/>
    public override ValueTask WriteAsync(ReadOnlyMemory<byte> data)
    {
        ObjectDisposedException.ThrowIf(_closed, this);
        if (_sendLength == 0 && TryWriteFromReceiveBuffer(data))
        {
            return default;
        }

        MoveDirectToSendBuffer();
        byte[] buffer = (_send ??= _owner.SendBuffers.TakeSlot()).Object;
        if (data.Length <= buffer.Length - _sendLength)
        {
            data.Span.CopyTo(buffer.AsSpan(_sendLength));
            _sendLength += data.Length;
            return default;
        }

        return WriteSlowAsync(data);
    }

    /// <inheritdoc/>
    public override ValueTask FlushAsync()
    {
        ObjectDisposedException.ThrowIf(_closed, this);
        return _sendLength == 0 && _directLength == 0 ? default : FlushOrThrowAsync();
    }

    /// <inheritdoc/>
    public override string ToString() => $"TCP connection {_id} from {_remoteEndPoint}";

    /// <summary>Asks the loop to end the stream gracefully; ends it at once if the loop waits owing nothing, and wakes a
    /// loop that waits holding part of a message.</summary>
    private void RequestEnd(int request)
    {
        if (Interlocked.CompareExchange(ref _closeRequest, request, NoCloseRequest) != NoCloseRequest)
        {
            return;
        }

        if (Interlocked.CompareExchange(ref _phase, Ended, Waiting) == Waiting)
        {
            // The loop waits for data and owes nothing: end the stream now. The client's close, or its next data,
            // wakes the loop, which then discards what comes (a stop) or lingers (a close), and so does the linger's end.
            EndStream();
        }
        else if (Volatile.Read(ref _waitingWithPartial) == 1)
        {
            // It waits for the rest of a message: wake it, and it ends the stream after the handler's last word.
            Volatile.Read(ref _partialWait)!.Cancel();
        }
    }

    /// <summary>Whether nothing has moved on the connection for <see cref="QuietBeforeStopMs"/> and nothing received waits unread.</summary>
    private bool IsQuiet()
    {
        try
        {
            return Now() - LastActivity >= QuietBeforeStopMs && _socket.Available == 0;
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Closed or reset meanwhile: the loop ends it.
            return false;
        }
    }

    /// <summary>Takes a write of received bytes (an echo, a forwarded part) as a span of the receive buffer, alone or
    /// right after the span already taken; a copy would cost more than the rest of the reply's way to the kernel.</summary>
    private bool TryWriteFromReceiveBuffer(ReadOnlyMemory<byte> data)
    {
        if (_receive is not { } receive || !MemoryMarshal.TryGetArray(data, out ArraySegment<byte> segment)
            || !ReferenceEquals(segment.Array, receive.Object))
        {
            return false;
        }

        if (_directLength == 0)
        {
            _directOffset = segment.Offset;
        }
        else if (segment.Offset != _directOffset + _directLength)
        {
            return false;
        }

        _directLength += segment.Count;
        return true;
    }

    /// <summary>Copies the written span of the receive buffer to the empty send buffer, before a write that does not follow it.</summary>
    private void MoveDirectToSendBuffer()
    {
        if (_directLength == 0)
        {
            return;
        }

        // Both buffers are the server's buffer size, so the span fits the empty send buffer.
        byte[] buffer = (_send ??= _owner.SendBuffers.TakeSlot()).Object;
        _receive!.Object.AsSpan(_directOffset, _directLength).CopyTo(buffer);
        _sendLength = _directLength;
        _directLength = 0;
    }

    /// <summary>Fills the send buffer, sends it when full, and goes on; data at least a buffer long goes out directly.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask WriteSlowAsync(ReadOnlyMemory<byte> data)
    {
        byte[] buffer = _send!.Object;
        while (data.Length > 0)
        {
            if (_sendLength == 0 && data.Length >= buffer.Length && MemoryMarshal.TryGetArray(data, out ArraySegment<byte> segment))
            {
                ThrowIfFailed(await SendAllAsync(segment.Array!, segment.Offset, segment.Count).ConfigureAwait(false));
                return;
            }

            int copied = Math.Min(data.Length, buffer.Length - _sendLength);
            data.Span[..copied].CopyTo(buffer.AsSpan(_sendLength));
            _sendLength += copied;
            data = data[copied..];
            if (_sendLength == buffer.Length)
            {
                ThrowIfFailed(await SendBufferedAsync().ConfigureAwait(false));
            }
        }
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask FlushOrThrowAsync() => ThrowIfFailed(await SendBufferedAsync().ConfigureAwait(false));

    private void ThrowIfFailed(SocketError error)
    {
        if (error != SocketError.Success)
        {
            // The loop sees the socket shut and closes the connection after the handler's call.
            _writeFailure = error;
            Shutdown(SocketShutdown.Both);
            throw new IOException($"Sending on {this} failed: {error}.", new SocketException((int)error));
        }
    }

    /// <summary>Sends what was written: the span of the receive buffer or what the send buffer holds; keeps the buffers.</summary>
    /// <returns>The socket error of the send, or <see cref="SocketError.Success"/>.</returns>
    private ValueTask<SocketError> SendBufferedAsync()
    {
        if (_directLength != 0)
        {
            int direct = _directLength;
            _directLength = 0;
            return SendAllAsync(_receive!.Object, _directOffset, direct);
        }

        int length = _sendLength;
        _sendLength = 0;
        return length == 0 ? new(SocketError.Success) : SendAllAsync(_send!.Object, 0, length);
    }

    /// <summary>Sends <paramref name="count"/> bytes of <paramref name="buffer"/> from <paramref name="offset"/>, completing
    /// partial sends; bytes count as sent as each send hands them to the kernel.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<SocketError> SendAllAsync(byte[] buffer, int offset, int count)
    {
        Volatile.Write(ref _sending, 1);
        Volatile.Write(ref _lastActivity, Now());
        try
        {
            for (int sent = 0; sent < count; sent += _args.BytesTransferred)
            {
                _args.SetBuffer(buffer, offset + sent, Math.Min(count - sent, MaxSendChunk));
                await _args.SendAsync(_socket).ConfigureAwait(false);
                if (_args.SocketError != SocketError.Success)
                {
                    return _args.SocketError;
                }

                _owner.Count.BytesSent(_args.BytesTransferred);
                Volatile.Write(ref _bytesMoved, _bytesMoved + _args.BytesTransferred);
                Volatile.Write(ref _lastActivity, Now());
            }

            return SocketError.Success;
        }
        finally
        {
            _args.SetBuffer(null, 0, 0);
            Volatile.Write(ref _sending, 0);
        }
    }

    /// <summary>Sends what is buffered and gives the send buffer back: an idle connection holds none.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<SocketError> FlushAndReleaseAsync()
    {
        SocketError error = await SendBufferedAsync().ConfigureAwait(false);
        if (_send is { } send)
        {
            _send = null;
            _owner.SendBuffers.Release(send);
        }

        return error;
    }

    private async Task RunAsync()
    {
        _owner.Logger.ConnectionOpened(_id, _remoteEndPoint);

        SocketError error = SocketError.Success;
        try
        {
            BeginHandlerCall();
            await _handler.OnConnectedAsync(this).ConfigureAwait(false);
            EndHandlerCall();
            error = await FlushAndReleaseAsync().ConfigureAwait(false);
            if (error == SocketError.Success)
            {
                error = await ServeAsync().ConfigureAwait(false);
            }
        }
        catch (ObjectDisposedException) when (Volatile.Read(ref _closeRequest) is Aborted or IdleClose or Evicted)
        {
            // The end of the stop grace period, or a cut-off mid-reply, disposed the socket under the loop.
            error = SocketError.OperationAborted;
        }
        catch (IOException) when (_writeFailure != SocketError.Success)
        {
            // A write the client's reset or a failure cut short, thrown through the handler.
            error = _writeFailure;
        }
        catch (OperationCanceledException) when (IsCutOffOrClosed)
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
                _owner.Logger.ConnectionFailed(ex, _id, _remoteEndPoint, LogRateLimiter.SuppressedNote(suppressed));
            }
        }
        finally
        {
            Finish(error);
        }
    }

    /// <summary>Waits for data, has the handler handle it and sends the replies, until the connection ends.</summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, else the error.</returns>
    private async Task<SocketError> ServeAsync()
    {
        while (true)
        {
            bool partial = _pending > 0;
            if (partial)
            {
                // Publish, with a full fence, that the loop waits holding part of a message; then read the close request.
                _partialWait ??= new CancellationTokenSource();
                Interlocked.Exchange(ref _waitingWithPartial, 1);
                int request = Volatile.Read(ref _closeRequest);
                if (request is StopRequested or HandlerClose)
                {
                    Volatile.Write(ref _waitingWithPartial, 0);
                    return await EndStreamAsync(request == StopRequested).ConfigureAwait(false);
                }
            }
            else
            {
                ReleaseReceiveBuffer();
                if (!EnterWaiting())
                {
                    return await AfterStreamEndedAsync().ConfigureAwait(false);
                }
            }

            // Wait for data with no buffer (a zero-byte receive): an idle connection holds none.
            SocketError waited;
            if (partial)
            {
                waited = await WaitHoldingPartAsync(_partialWait!.Token).ConfigureAwait(false);
            }
            else
            {
                _args.SetBuffer(null, 0, 0);
                await _args.ReceiveAsync(_socket).ConfigureAwait(false);
                waited = _args.SocketError;
            }

            Volatile.Write(ref _waitingWithPartial, 0);
            if (waited != SocketError.Success)
            {
                return waited;
            }

            if (!partial && Interlocked.CompareExchange(ref _phase, Handling, Waiting) != Waiting)
            {
                // A close request ended the stream while this waited: what came since is not owed.
                return await AfterStreamEndedAsync().ConfigureAwait(false);
            }

            var (open, error) = await HandleWhileDataAsync().ConfigureAwait(false);
            if (!open)
            {
                return error;
            }
        }
    }

    /// <summary>Waits for the rest of a message, until a close request cancels the wait (see <see cref="RequestEnd"/>).</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<SocketError> WaitHoldingPartAsync(CancellationToken closeRequested)
    {
        try
        {
            await _socket.ReceiveAsync(Memory<byte>.Empty, SocketFlags.None, closeRequested).ConfigureAwait(false);
            return SocketError.Success;
        }
        catch (OperationCanceledException)
        {
            // A close request: back at the top of the loop, the stream ends.
            return SocketError.Success;
        }
        catch (SocketException ex)
        {
            return ex.SocketErrorCode;
        }
        catch (ObjectDisposedException)
        {
            return SocketError.OperationAborted;
        }
    }

    /// <summary>Publishes that the loop is about to wait for data, owing nothing, then looks for a close request (see the
    /// remarks on the class): if there is one, ends the stream unless the requester just did.</summary>
    /// <returns>Whether to wait for data; <see langword="false"/> once the stream is ended.</returns>
    private bool EnterWaiting()
    {
        Interlocked.Exchange(ref _phase, Waiting);
        if (Volatile.Read(ref _closeRequest) is not (StopRequested or HandlerClose))
        {
            return true;
        }

        if (Interlocked.CompareExchange(ref _phase, Ended, Waiting) == Waiting)
        {
            EndStream();
        }

        return false;
    }

    /// <summary>Ends the stream with part of a message held: on a stop the handler has its last word about it first.</summary>
    private async Task<SocketError> EndStreamAsync(bool stopping)
    {
        if (stopping)
        {
            BeginHandlerCall();
            await _handler.OnInputEndedAsync(this, _receive!.Object.AsMemory(0, _pending)).ConfigureAwait(false);
            EndHandlerCall();
        }

        // Sent before the receive buffer goes back: the replies may lie in it.
        SocketError error = await FlushAndReleaseAsync().ConfigureAwait(false);
        _pending = 0;
        ReleaseReceiveBuffer();
        Interlocked.Exchange(ref _phase, Ended);
        if (error != SocketError.Success)
        {
            return error;
        }

        EndStream();
        return await AfterStreamEndedAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Takes what has arrived into the receive buffer, after the part of a message it holds, has the handler handle it
    /// and sends the replies, for as long as each read fills the buffer (more is likely waiting); returns when nothing
    /// more is there, at end of stream, on an error, or before the first read after a close request.
    /// </summary>
    /// <returns>Whether the connection is still open, and the last socket error.</returns>
    /// <remarks>
    /// The reads never wait: a zero-byte receive can report data that is gone or never came (its
    /// readiness can be stale), and a read that waited would hold the buffer while the connection idles.
    /// </remarks>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<(bool Open, SocketError Error)> HandleWhileDataAsync()
    {
        // Never waits: a connection holds at most one receive buffer, and there are as many as connections.
        byte[] buffer = (_receive ??= _owner.Buffers.TakeSlot()).Object;
        while (Volatile.Read(ref _closeRequest) is not (StopRequested or HandlerClose))
        {
            int room = buffer.Length - _pending;
            int received = _socket.Receive(buffer, _pending, room, SocketFlags.None, out SocketError error);
            if (error == SocketError.WouldBlock)
            {
                return (true, SocketError.Success);
            }

            if (error != SocketError.Success)
            {
                return (false, error);
            }

            if (received == 0)
            {
                // The client's end of stream: the handler has its last word about a message it left unfinished.
                if (_pending > 0)
                {
                    BeginHandlerCall();
                    await _handler.OnInputEndedAsync(this, buffer.AsMemory(0, _pending)).ConfigureAwait(false);
                    EndHandlerCall();
                    _pending = 0;
                }

                return (false, await FlushAndReleaseAsync().ConfigureAwait(false));
            }

            Volatile.Write(ref _lastActivity, Now());
            Volatile.Write(ref _bytesMoved, _bytesMoved + received);
            int available = _pending + received;
            BeginHandlerCall();
            int consumed = await _handler.OnReceivedAsync(this, buffer.AsMemory(0, available)).ConfigureAwait(false);
            EndHandlerCall();
            if ((uint)consumed > (uint)available)
            {
                throw new InvalidOperationException($"{_handler.GetType().Name}.OnReceivedAsync returned {consumed}, not a count from 0 to the {available} bytes it was given.");
            }

            _pending = available - consumed;
            _owner.Count.MessageHandled();
            _owner.Logger.ConnectionReceiveHandled(_id, received);
            error = await FlushAndReleaseAsync().ConfigureAwait(false);
            if (error != SocketError.Success)
            {
                return (false, error);
            }

            // Only now that the replies are sent: they may lie in the bytes this moves.
            if (_pending > 0 && consumed > 0)
            {
                buffer.AsSpan(consumed, _pending).CopyTo(buffer);
            }

            if (_pending == buffer.Length)
            {
                // A message longer than the buffer: it can never be handled.
                return (false, SocketError.MessageSize);
            }

            if (received < room)
            {
                return (true, SocketError.Success);
            }
        }

        // A close request: stop reading; back in the loop, the stream ends.
        return (true, SocketError.Success);
    }

    /// <summary>
    /// Ends the stream after what was sent; after the handler's close, the linger begins. On a stop, a connection that is
    /// quiet has its receive side shut too, which wakes the loop to close it as at the client's end of stream.
    /// </summary>
    private void EndStream()
    {
        int request = Volatile.Read(ref _closeRequest);
        Shutdown(request == StopRequested && IsQuiet() ? SocketShutdown.Both : SocketShutdown.Send);
        if (request == HandlerClose)
        {
            _ = LingerEnd();
        }
    }

    /// <summary>The stream has ended: on a stop, drops what the client still sends; after the handler's close, lingers.</summary>
    private Task<SocketError> AfterStreamEndedAsync()
        => Volatile.Read(ref _closeRequest) == HandlerClose ? LingerAsync() : DiscardUntilEndAsync();

    /// <summary>Gets the linger's end, made now (its timer started) if nobody has made it yet.</summary>
    private CancellationTokenSource LingerEnd()
    {
        if (Volatile.Read(ref _lingerEnd) is { } published)
        {
            return published;
        }

        // Armed before it is published: once published, Finish may dispose it.
        var lingerEnd = new CancellationTokenSource();
        lingerEnd.Token.UnsafeRegister(static connection => ((SocketConnection)connection!).Reset(), this);
        lingerEnd.CancelAfter(s_linger);
        if (Interlocked.CompareExchange(ref _lingerEnd, lingerEnd, null) is { } other)
        {
            lingerEnd.Dispose();
            return other;
        }

        return lingerEnd;
    }

    /// <summary>
    /// After the handler's close has ended the stream: reads nothing more (so holds no buffer) and waits for the
    /// client's close, at most until the linger's end resets the connection; the client has its last reply by then.
    /// </summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, <see cref="SocketError.TimedOut"/> when
    /// the linger's end reset the connection, else the error.</returns>
    /// <remarks>
    /// The args goes home only once no operation is pending on it: the loop waits with a zero-byte receive on it, which
    /// the client's close or data completes, and which the reset at the linger's end (a closed socket) completes with
    /// an error. Once the client has sent data instead, the loop waits for the linger's end with no receive at all,
    /// since one would complete at once for data that is never read.
    /// </remarks>
    private async Task<SocketError> LingerAsync()
    {
        CancellationTokenSource lingerEnd = LingerEnd();
        try
        {
            while (true)
            {
                _args.SetBuffer(null, 0, 0);
                await _args.ReceiveAsync(_socket).ConfigureAwait(false);
                if (_args.SocketError != SocketError.Success)
                {
                    return lingerEnd.IsCancellationRequested ? SocketError.TimedOut : _args.SocketError;
                }

                int peeked = PeekInput(out SocketError error);
                if (error == SocketError.WouldBlock)
                {
                    // Readiness that was stale: wait again.
                    continue;
                }

                if (error != SocketError.Success || peeked == 0)
                {
                    // The client's close (or reset): the end of a graceful close.
                    return error;
                }

                await Task.Delay(Timeout.Infinite, lingerEnd.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
                Reset();
                return SocketError.TimedOut;
            }
        }
        catch (ObjectDisposedException) when (lingerEnd.IsCancellationRequested)
        {
            // The linger's end closed the socket before a receive began on it.
            return SocketError.TimedOut;
        }
    }

    /// <summary>Whether input waits, without taking it: 1 if it does, 0 at the client's end of stream.</summary>
    private int PeekInput(out SocketError error)
    {
        Span<byte> first = stackalloc byte[1];
        return _socket.Receive(first, SocketFlags.Peek, out error);
    }

    /// <summary>Closes the socket with a reset, not an end of stream: what the kernel still holds to send is dropped.</summary>
    private void Reset()
    {
        try
        {
            _socket.LingerState = new LingerOption(enable: true, seconds: 0);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Closed meanwhile: nothing left to reset.
        }

        _socket.Dispose();
    }

    /// <summary>After the stream has ended on a stop: reads and drops what the client still sends, until it closes (or
    /// the end of the grace period, or the idle sweep, closes the socket).</summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, else the error.</returns>
    private async Task<SocketError> DiscardUntilEndAsync()
    {
        Pool<byte[]> buffers = _owner.Buffers;
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

    private void ReleaseReceiveBuffer()
    {
        Debug.Assert(_directLength == 0 || _closed, "a reply in the receive buffer is sent before the buffer goes back");
        if (_receive is { } receive)
        {
            _receive = null;
            _owner.Buffers.Release(receive);
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
            Volatile.Read(ref _lingerEnd)?.Dispose();
            _directLength = 0;
            _tls?.Dispose();
            _socket.Dispose();
            ReleaseReceiveBuffer();
            if (_send is { } send)
            {
                _send = null;
                _sendLength = 0;
                _owner.SendBuffers.Release(send);
            }

            try
            {
                _handler.OnClosed(this);
            }
            catch (Exception ex)
            {
                _owner.OnHandlerFailed(ex);
                _owner.Logger.ConnectionFailed(ex, _id, _remoteEndPoint, string.Empty);
            }
            finally
            {
                _owner.OnConnectionClosed(this, TimeSpan.FromMilliseconds(Now() - _openedAt));
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
            error = _writeFailure;
        }

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
            else if (request == HandlerClose && error == SocketError.TimedOut)
            {
                _owner.Logger.ConnectionLingerReset(_id, _remoteEndPoint);
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

    private void BeginHandlerCall() => Volatile.Write(ref _inHandlerCall, 1);

    private void EndHandlerCall()
    {
        Volatile.Write(ref _inHandlerCall, 0);
        Volatile.Write(ref _lastActivity, Now());
    }

    /// <summary>Cancels <see cref="ConnectionClosed"/> if a handler has asked for it; its callbacks run on the thread pool,
    /// not on the thread that cuts the connection off.</summary>
    private void CancelConnectionClosed() => _ = Volatile.Read(ref _connectionClosed)?.CancelAsync();

    private long Now() => _clock is null ? Environment.TickCount64 : _clock();

    /// <summary>Idle close or eviction: ends the connection and cancels the handler's work. Cut off mid-reply, it resets
    /// the connection at once: a shut send side would end the stream after the part the kernel holds, and the client
    /// would take a cut reply for a whole one. The loop then meets the closed socket as after the stop's abort.</summary>
    private void CutOff()
    {
        if (Volatile.Read(ref _sending) == 1 || Volatile.Read(ref _inHandlerCall) == 1)
        {
            Reset();
        }
        else
        {
            Shutdown(SocketShutdown.Both);
        }

        EndLinger();
        CancelConnectionClosed();
    }

    /// <summary>Ends a linger now, so that a cut-off or the stop's abort does not wait for its timer.</summary>
    private void EndLinger()
    {
        try
        {
            Volatile.Read(ref _lingerEnd)?.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // The loop has ended and disposed it: nothing lingers.
        }
    }

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
