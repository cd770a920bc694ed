using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;

namespace SocketServers.Internal;

/// <summary>Plaintext byte I/O on the socket: waits are zero-byte receives on the pooled args, so an idle connection holds
/// no buffer; receives never wait.</summary>
internal sealed class SocketTransport : ConnectionTransport
{
    private readonly PooledSocketArgs _args;

    // The head and body of a gathered send, reused: the args copies them into a list of its own, kept for the next.
    private readonly ArraySegment<byte>[] _gather = new ArraySegment<byte>[2];

    public SocketTransport(Socket socket, EndPoint? remoteEndPoint, PooledSocketArgs args)
        : base(socket, remoteEndPoint)
    {
        _args = args;

        // Receives with a buffer never wait (a zero-byte receive's readiness can be stale): only the waits do.
        socket.Blocking = false;
    }

    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<SocketError> WaitAsync()
    {
        _args.SetBuffer(null, 0, 0);
        await _args.ReceiveAsync(Socket).ConfigureAwait(false);
        return _args.SocketError;
    }

    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<SocketError> WaitAsync(CancellationToken cancellationToken)
    {
        try
        {
            await Socket.ReceiveAsync(Memory<byte>.Empty, SocketFlags.None, cancellationToken).ConfigureAwait(false);
            return SocketError.Success;
        }
        catch (OperationCanceledException)
        {
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

    /// <inheritdoc/>
    public override ValueTask<(int Bytes, SocketError Error)> ReceiveAsync(byte[] buffer, int offset, int count)
    {
        int received = Socket.Receive(buffer, offset, count, SocketFlags.None, out SocketError error);
        return new((received, error));
    }

    /// <inheritdoc/>
    public override ValueTask<(int Bytes, SocketError Error)> PeekAsync()
    {
        Span<byte> first = stackalloc byte[1];
        int peeked = Socket.Receive(first, SocketFlags.Peek, out SocketError error);
        return new((peeked, error));
    }

    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<(int Bytes, SocketError Error)> SendAsync(byte[] buffer, int offset, int count)
    {
        _args.SetBuffer(buffer, offset, count);
        try
        {
            await _args.SendAsync(Socket).ConfigureAwait(false);
            return (_args.BytesTransferred, _args.SocketError);
        }
        finally
        {
            _args.SetBuffer(null, 0, 0);
        }
    }

    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<(int Bytes, SocketError Error)> SendAsync(byte[]? head, int headOffset, int headCount, ArraySegment<byte> body)
    {
        if (headCount == 0)
        {
            return await SendAsync(body.Array!, body.Offset, body.Count).ConfigureAwait(false);
        }

        _gather[0] = new ArraySegment<byte>(head!, headOffset, headCount);
        _gather[1] = body;
        _args.BufferList = _gather;
        try
        {
            await _args.SendAsync(Socket).ConfigureAwait(false);
            return (_args.BytesTransferred, _args.SocketError);
        }
        finally
        {
            _args.BufferList = null;
            _gather.AsSpan().Clear();
        }
    }

    /// <inheritdoc/>
    public override void EndStream(SocketShutdown how) => Shutdown(how);
}
