using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>
/// A connection's output: the handler's writes, buffered in a pooled send buffer (taken on the first write, given back
/// when the replies are sent) or, for received bytes written back, sent straight from the receive buffer; and the
/// sends, in chunks, each counted as activity as the transport takes it.
/// </summary>
/// <remarks>The connection's loop and its handler's calls alone use it, one at a time.</remarks>
internal sealed class ConnectionOutput
{
    // The most a single send hands the transport, so that a long reply's progress counts as activity and toward the
    // data rate as it goes, not only once all of it is sent.
    private const int MaxSendChunk = 64 * 1024;

    private readonly ITcpConnectionOwner _owner;
    private readonly ConnectionTransport _transport;
    private readonly ConnectionActivity _activity;
    private readonly ConnectionInput _input;

    // The send buffer, held while written bytes wait to be sent: _sendLength of them.
    private PoolSlot<byte[]>? _send;
    private int _sendLength;

    // Written bytes that lie in the receive buffer, sent from there rather than copied: _directLength of them from
    // _directOffset. Never both these and _sendLength; they are sent before the receive buffer moves or goes back.
    private int _directOffset;
    private int _directLength;

    public ConnectionOutput(ITcpConnectionOwner owner, ConnectionTransport transport, ConnectionActivity activity, ConnectionInput input)
    {
        _owner = owner;
        _transport = transport;
        _activity = activity;
        _input = input;
    }

    /// <summary>Gets the error of a write that failed in a handler's call, which the <see cref="IOException"/> thrown
    /// through the handler reports; <see cref="SocketError.Success"/> if none did.</summary>
    public SocketError WriteFailure { get; private set; }

    /// <summary>Gets whether written bytes lie in the receive buffer, not sent yet.</summary>
    public bool HoldsReceivedBytes => _directLength != 0;

    /// <summary>Buffers <paramref name="data"/>, sending what fills the buffer.</summary>
    public ValueTask WriteAsync(ReadOnlyMemory<byte> data)
    {
        if (_sendLength == 0 && TryWriteFromReceiveBuffer(data))
        {
            return default;
        }

        if (_directLength > _owner.LargeBuffers.BufferSize)
        {
            return SendDirectThenWriteAsync(data);
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

    /// <summary>Sends what is buffered and then <paramref name="data"/>, without copying it, in one send where the
    /// transport gathers; memory not backed by an array is copied as <see cref="WriteAsync"/> does.</summary>
    public ValueTask WriteOwnedAsync(ReadOnlyMemory<byte> data)
    {
        if (data.IsEmpty)
        {
            return default;
        }

        return MemoryMarshal.TryGetArray(data, out ArraySegment<byte> body) ? SendWithBufferedAsync(body) : WriteAsync(data);
    }

    /// <summary>Sends what was written; throws if the send fails.</summary>
    public ValueTask FlushAsync() => _sendLength == 0 && _directLength == 0 ? default : FlushOrThrowAsync();

    /// <summary>Sends what is buffered and gives the send buffer back: an idle connection holds none.</summary>
    /// <returns>The socket error of the send, or <see cref="SocketError.Success"/>.</returns>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<SocketError> FlushAndReleaseAsync()
    {
        SocketError error = await SendBufferedAsync().ConfigureAwait(false);
        ReleaseSendBuffer();
        return error;
    }

    /// <summary>The connection has closed: drops what was not sent and gives the send buffer back.</summary>
    public void Release()
    {
        _directLength = 0;
        ReleaseSendBuffer();
    }

    private void ReleaseSendBuffer()
    {
        if (_send is { } send)
        {
            _send = null;
            _sendLength = 0;
            _owner.SendBuffers.Release(send);
        }
    }

    /// <summary>Takes a write of received bytes (an echo, a forwarded part) as a span of the receive buffer, alone or
    /// right after the span already taken; a copy would cost more than the rest of the reply's way to the kernel.</summary>
    private bool TryWriteFromReceiveBuffer(ReadOnlyMemory<byte> data)
    {
        if (_input.Buffer is not { } receive || !MemoryMarshal.TryGetArray(data, out ArraySegment<byte> segment)
            || !ReferenceEquals(segment.Array, receive))
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

        // The span is at most the server's buffer size (a longer one is sent first), so it fits the empty send buffer.
        byte[] buffer = (_send ??= _owner.SendBuffers.TakeSlot()).Object;
        _input.Buffer!.AsSpan(_directOffset, _directLength).CopyTo(buffer);
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

    /// <summary>Sends the span of a grown receive buffer, too long for the send buffer, where it lies; then writes.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask SendDirectThenWriteAsync(ReadOnlyMemory<byte> data)
    {
        ThrowIfFailed(await SendBufferedAsync().ConfigureAwait(false));
        await WriteAsync(data).ConfigureAwait(false);
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask FlushOrThrowAsync() => ThrowIfFailed(await SendBufferedAsync().ConfigureAwait(false));

    private void ThrowIfFailed(SocketError error)
    {
        if (error != SocketError.Success)
        {
            // The loop sees the socket shut and closes the connection after the handler's call.
            WriteFailure = error;
            _transport.Shutdown(SocketShutdown.Both);
            throw new IOException($"Sending on {_input.Connection} failed: {error}.", new SocketException((int)error));
        }
    }

    /// <summary>Sends what was written: the span of the receive buffer or what the send buffer holds; keeps the buffers.</summary>
    private ValueTask<SocketError> SendBufferedAsync()
    {
        if (_directLength != 0)
        {
            int direct = _directLength;
            _directLength = 0;
            return SendAllAsync(_input.Buffer!, _directOffset, direct);
        }

        int length = _sendLength;
        _sendLength = 0;
        return length == 0 ? new(SocketError.Success) : SendAllAsync(_send!.Object, 0, length);
    }

    /// <summary>Sends what is buffered (the span of the receive buffer or the send buffer's bytes) and then
    /// <paramref name="body"/>, gathered, completing partial sends; throws if a send fails.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask SendWithBufferedAsync(ArraySegment<byte> body)
    {
        bool direct = _directLength != 0;
        byte[]? head = direct ? _input.Buffer : _send?.Object;
        int headOffset = direct ? _directOffset : 0;
        int headCount = direct ? _directLength : _sendLength;
        _directLength = 0;
        _sendLength = 0;
        _activity.BeginSend();
        try
        {
            while (headCount + body.Count > 0)
            {
                var (bytes, error) = await _transport.SendAsync(head, headOffset, headCount, body[..Math.Min(body.Count, MaxSendChunk)]).ConfigureAwait(false);
                ThrowIfFailed(error);
                _owner.Count.BytesSent(bytes);
                _activity.Moved(bytes);
                int fromHead = Math.Min(bytes, headCount);
                (headOffset, headCount) = (headOffset + fromHead, headCount - fromHead);
                body = body[(bytes - fromHead)..];
            }
        }
        finally
        {
            _activity.EndSend();
        }
    }

    /// <summary>Sends <paramref name="count"/> bytes of <paramref name="buffer"/> from <paramref name="offset"/>, completing
    /// partial sends; bytes count as sent as each send hands them over.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<SocketError> SendAllAsync(byte[] buffer, int offset, int count)
    {
        _activity.BeginSend();
        try
        {
            for (int sent = 0; sent < count;)
            {
                var (bytes, error) = await _transport.SendAsync(buffer, offset + sent, Math.Min(count - sent, MaxSendChunk)).ConfigureAwait(false);
                if (error != SocketError.Success)
                {
                    return error;
                }

                _owner.Count.BytesSent(bytes);
                _activity.Moved(bytes);
                sent += bytes;
            }

            return SocketError.Success;
        }
        finally
        {
            _activity.EndSend();
        }
    }
}
