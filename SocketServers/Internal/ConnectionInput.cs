using System.Diagnostics;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>
/// A connection's receive loop: waits for data holding no buffer, takes what came into a pooled receive buffer, has
/// the handler handle it and the output send the replies; once the stream has ended, discards what the client still
/// sends (a stop) or lingers (the handler's close).
/// </summary>
/// <remarks>The loop alone runs it, except <see cref="StartLinger"/> and <see cref="EndLinger"/>, which any thread may call.</remarks>
internal sealed class ConnectionInput
{
    // How long a connection the handler closed waits for the client to close before the server resets it: ample for the
    // last reply to reach the client, short enough that such connections cannot keep clients waiting for a slot.
    private const long LingerMs = 1000;

    private readonly SocketConnection _connection;
    private readonly ITcpConnectionOwner _owner;
    private readonly TcpConnectionHandler _handler;
    private readonly ConnectionTransport _transport;
    private readonly CloseHandshake _handshake;
    private readonly ConnectionActivity _activity;

    // The loop's alone. The receive buffer, held while data is there and while part of a message waits for the rest.
    private readonly ReceiveBuffer _receive;

    // The linger's deadline on the owner's clock, long.MaxValue until the stream ends after the handler's close (set
    // once, by whichever side ends it); the sweep ends the linger once it has passed, so a close costs no timer.
    private long _lingerDeadline = long.MaxValue;

    // 1 once the linger has ended (its deadline, a cut-off or the stop's abort) and the socket is reset; set once,
    // with a full fence, before the reset and before _lingerEndWait is read.
    private int _lingerEnded;

    // Made by the loop only when the client sends during the linger, with no receive left to wait on; published with
    // a full fence before the loop reads _lingerEnded, and completed by the linger's end.
    private TaskCompletionSource? _lingerEndWait;

    public ConnectionInput(SocketConnection connection, ITcpConnectionOwner owner, ConnectionTransport transport, CloseHandshake handshake, ConnectionActivity activity)
    {
        _connection = connection;
        _owner = owner;
        _handler = owner.Handler;
        _transport = transport;
        _handshake = handshake;
        _activity = activity;
        _receive = new ReceiveBuffer(owner);
    }

    /// <summary>Gets the connection, as the handler sees it.</summary>
    public SocketConnection Connection => _connection;

    /// <summary>Gets the receive buffer while the loop holds one.</summary>
    public byte[]? Buffer => _receive.Array;

    /// <summary>Gets whether the linger's end has reset the connection (or a cut-off has ended the linger).</summary>
    public bool LingerEnded => Volatile.Read(ref _lingerEnded) == 1;

    private ConnectionOutput Output => _connection.Output;

    /// <summary>Waits for data, has the handler handle it and sends the replies, until the connection ends.</summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, else the error.</returns>
    public async Task<SocketError> ServeAsync()
    {
        while (true)
        {
            bool partial = _receive.Pending > 0;
            SocketError waited;
            if (partial)
            {
                if (!_handshake.BeginPartialWait(out CancellationToken requested))
                {
                    return await EndStreamHoldingPartAsync().ConfigureAwait(false);
                }

                // A close request cancels the wait: back at the top of the loop, the stream ends.
                waited = await _transport.WaitAsync(requested).ConfigureAwait(false);
                _handshake.EndPartialWait();
            }
            else
            {
                ReleaseBuffer();
                if (!_handshake.EnterWaiting(out bool endStream))
                {
                    if (endStream)
                    {
                        _connection.EndStream();
                    }

                    return await AfterStreamEndedAsync().ConfigureAwait(false);
                }

                // An idle connection holds no buffer.
                waited = await _transport.WaitAsync().ConfigureAwait(false);
            }

            if (waited != SocketError.Success)
            {
                return waited;
            }

            if (!partial && !_handshake.LeaveWaiting())
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

    /// <summary>Gives the receive buffer back.</summary>
    public void ReleaseBuffer()
    {
        Debug.Assert(!Output.HoldsReceivedBytes || _connection.IsClosed, "a reply in the receive buffer is sent before the buffer goes back");
        _receive.Release();
    }

    /// <summary>Begins the linger after the handler's close has ended the stream, unless it has begun.</summary>
    public void StartLinger() => Interlocked.CompareExchange(ref _lingerDeadline, _activity.Now + LingerMs, long.MaxValue);

    /// <summary>Sweep only: whether the linger's deadline has passed.</summary>
    public bool IsLingerDue(long now) => now >= Volatile.Read(ref _lingerDeadline) && Volatile.Read(ref _lingerEnded) == 0;

    /// <summary>Ends a linger that has begun: resets the connection and wakes the loop. Its deadline (the sweep), a
    /// cut-off or the stop's abort.</summary>
    public void EndLinger()
    {
        if (Volatile.Read(ref _lingerDeadline) == long.MaxValue || Interlocked.Exchange(ref _lingerEnded, 1) == 1)
        {
            return;
        }

        _transport.Reset();
        Volatile.Read(ref _lingerEndWait)?.TrySetResult();
    }

    /// <summary>
    /// Takes what has arrived into the receive buffer, after the part of a message it holds, has the handler handle it
    /// and sends the replies, for as long as each read fills the buffer (more is likely waiting); returns when nothing
    /// more is there, at end of stream, on an error, or before the first read after a close request.
    /// </summary>
    /// <returns>Whether the connection is still open, and the last socket error.</returns>
    /// <remarks>The reads never wait: a wait's readiness can be stale, and a read that waited would hold the buffer while
    /// the connection idles.</remarks>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<(bool Open, SocketError Error)> HandleWhileDataAsync()
    {
        while (!_handshake.IsEndRequested)
        {
            // A grown buffer while a message outgrows the normal one.
            byte[] buffer = _receive.Take();
            int room = buffer.Length - _receive.Pending;
            var (received, error) = await _transport.ReceiveAsync(buffer, _receive.Pending, room).ConfigureAwait(false);
            if (error != SocketError.Success)
            {
                return (error == SocketError.WouldBlock, error == SocketError.WouldBlock ? SocketError.Success : error);
            }

            if (received == 0)
            {
                return (false, await EndOfInputAsync().ConfigureAwait(false));
            }

            _activity.Moved(received);
            error = await HandleAsync(buffer, received).ConfigureAwait(false);
            if (error != SocketError.Success)
            {
                return (false, error);
            }

            if (received < room)
            {
                return (true, SocketError.Success);
            }
        }

        // A close request: stop reading; back in the loop, the stream ends.
        return (true, SocketError.Success);
    }

    /// <summary>Hands the handler what it has not consumed, <paramref name="received"/> bytes of them new, sends its
    /// replies, and keeps the rest at the buffer's start; a full buffer of which nothing was consumed grows, or, when it
    /// cannot, ends as a message too large.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<SocketError> HandleAsync(byte[] buffer, int received)
    {
        int available = _receive.Pending + received;
        _activity.BeginHandlerCall();
        int consumed = await _handler.OnReceivedAsync(_connection, buffer.AsMemory(0, available)).ConfigureAwait(false);
        _activity.EndHandlerCall();
        if ((uint)consumed > (uint)available)
        {
            throw new InvalidOperationException($"{_handler.GetType().Name}.OnReceivedAsync returned {consumed}, not a count from 0 to the {available} bytes it was given.");
        }

        int pending = available - consumed;
        _receive.Pending = pending;
        _owner.Count.MessageHandled();
        _owner.Logger.ConnectionReceiveHandled(_connection.Id, received);
        SocketError error = await Output.FlushAndReleaseAsync().ConfigureAwait(false);
        if (error != SocketError.Success)
        {
            return error;
        }

        // Only now that the replies are sent: they may lie in the bytes this moves.
        if (pending > 0 && consumed > 0)
        {
            buffer.AsSpan(consumed, pending).CopyTo(buffer);
        }

        if (pending < buffer.Length)
        {
            _receive.ShrinkIfFits();
            return SocketError.Success;
        }

        return _receive.TryGrow() ? SocketError.Success : await MessageTooLargeAsync().ConfigureAwait(false);
    }

    /// <summary>A message longer than the largest buffer, or than the budget leaves room for: the handler may reply,
    /// then the connection closes as on its <see cref="SocketConnection.Close"/>, dropping the message.</summary>
    private async ValueTask<SocketError> MessageTooLargeAsync()
    {
        _owner.OnMessageTooLarge(_receive.AtMaxMessageSize ? "max_message_size" : "memory_budget");
        _activity.BeginHandlerCall();
        await _handler.OnMessageTooLargeAsync(_connection, _receive.PendingBytes).ConfigureAwait(false);
        _activity.EndHandlerCall();

        // Sent before the buffer goes back: the replies may lie in it.
        SocketError error = await Output.FlushAndReleaseAsync().ConfigureAwait(false);
        _receive.Release();
        _connection.Close();
        return error;
    }

    /// <summary>The client's end of stream: the handler has its last word about a message it left unfinished.</summary>
    private async Task<SocketError> EndOfInputAsync()
    {
        if (_receive.Pending > 0)
        {
            _activity.BeginHandlerCall();
            await _handler.OnInputEndedAsync(_connection, _receive.PendingBytes).ConfigureAwait(false);
            _activity.EndHandlerCall();
        }

        SocketError error = await Output.FlushAndReleaseAsync().ConfigureAwait(false);
        _receive.Pending = 0;
        return error;
    }

    /// <summary>Ends the stream with part of a message held: on a stop the handler has its last word about it first.</summary>
    private async Task<SocketError> EndStreamHoldingPartAsync()
    {
        if (_handshake.Request == CloseRequest.Stop)
        {
            _activity.BeginHandlerCall();
            await _handler.OnInputEndedAsync(_connection, _receive.PendingBytes).ConfigureAwait(false);
            _activity.EndHandlerCall();
        }

        // Sent before the receive buffer goes back: the replies may lie in it.
        SocketError error = await Output.FlushAndReleaseAsync().ConfigureAwait(false);
        ReleaseBuffer();
        _handshake.MarkEnded();
        if (error != SocketError.Success)
        {
            return error;
        }

        _connection.EndStream();
        return await AfterStreamEndedAsync().ConfigureAwait(false);
    }

    /// <summary>The stream has ended: on a stop, drops what the client still sends; after the handler's close, lingers.</summary>
    private Task<SocketError> AfterStreamEndedAsync()
        => _handshake.Request == CloseRequest.HandlerClose ? LingerAsync() : DiscardUntilEndAsync();

    /// <summary>
    /// After the handler's close has ended the stream: reads nothing more into the pool and waits for the client's
    /// close, at most until the linger's end resets the connection; the client has its last reply by then.
    /// </summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, <see cref="SocketError.TimedOut"/> when
    /// the linger's end reset the connection, else the error.</returns>
    /// <remarks>The args goes home only once no operation is pending on it: the loop waits on it, which the client's
    /// close or data completes, and which the reset at the linger's end (a closed socket) completes with an error.
    /// Once the client has sent data instead, the loop waits for the linger's end with no receive at all, since one
    /// would complete at once for data that is never read.</remarks>
    private async Task<SocketError> LingerAsync()
    {
        StartLinger();
        try
        {
            while (true)
            {
                SocketError waited = await _transport.WaitAsync().ConfigureAwait(false);
                if (waited != SocketError.Success)
                {
                    return LingerEnded ? SocketError.TimedOut : waited;
                }

                var (peeked, error) = await _transport.PeekAsync().ConfigureAwait(false);
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

                var lingerEndWait = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                Interlocked.Exchange(ref _lingerEndWait, lingerEndWait);
                if (!LingerEnded)
                {
                    await lingerEndWait.Task.ConfigureAwait(false);
                }

                return SocketError.TimedOut;
            }
        }
        catch (ObjectDisposedException) when (LingerEnded)
        {
            // The linger's end closed the socket before a wait began on it.
            return SocketError.TimedOut;
        }
    }

    /// <summary>After the stream has ended on a stop: reads and drops what the client still sends, until it closes (or
    /// the end of the grace period, or the idle sweep, closes the socket).</summary>
    /// <returns><see cref="SocketError.Success"/> at the client's end of stream, else the error.</returns>
    private async Task<SocketError> DiscardUntilEndAsync()
    {
        Pool<byte[]> buffers = _owner.Buffers;
        while (true)
        {
            SocketError waited = await _transport.WaitAsync().ConfigureAwait(false);
            if (waited != SocketError.Success)
            {
                return waited;
            }

            PoolSlot<byte[]> buffer = buffers.TakeSlot();
            try
            {
                while (true)
                {
                    var (received, error) = await _transport.ReceiveAsync(buffer.Object, 0, buffer.Object.Length).ConfigureAwait(false);
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
}
