using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Security.Authentication;

namespace SocketServers.Internal;

/// <summary>
/// Byte I/O through an authenticated <see cref="SslStream"/>. A wait is a zero-byte read of the stream, which passes
/// through to the socket and also completes for plaintext the stream already holds (a socket receive cannot see it);
/// a pooled buffer is taken only after it. A record still arriving holds the stream's own buffer, not a pooled one.
/// </summary>
internal sealed class TlsTransport : ConnectionTransport
{
    private readonly SslStream _tls;

    // The loop's alone: a wait has completed and no receive has read since, so the next one finds data (or the end)
    // without waiting; otherwise a receive reports WouldBlock and the loop waits again, holding no buffer.
    private bool _ready;

    // The loop's alone, made on first use: where a lingering connection's peek reads the byte that tells data from
    // the client's close, as the stream cannot peek; never a pooled buffer.
    private byte[]? _peeked;

    public TlsTransport(Socket socket, EndPoint? remoteEndPoint, SslStream tls)
        : base(socket, remoteEndPoint)
    {
        _tls = tls;
    }

    /// <inheritdoc/>
    public override ValueTask<SocketError> WaitAsync() => WaitAsync(CancellationToken.None);

    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<SocketError> WaitAsync(CancellationToken cancellationToken)
    {
        try
        {
            await _tls.ReadAsync(Memory<byte>.Empty, cancellationToken).ConfigureAwait(false);
            _ready = true;
            return SocketError.Success;
        }
        catch (OperationCanceledException)
        {
            return SocketError.Success;
        }
        catch (Exception ex) when (IsTransportFailure(ex))
        {
            return ErrorOf(ex);
        }
    }

    /// <inheritdoc/>
    public override ValueTask<(int Bytes, SocketError Error)> ReceiveAsync(byte[] buffer, int offset, int count)
    {
        if (!_ready)
        {
            return new((0, SocketError.WouldBlock));
        }

        _ready = false;
        return ReadAsync(buffer.AsMemory(offset, count));
    }

    /// <inheritdoc/>
    public override ValueTask<(int Bytes, SocketError Error)> PeekAsync()
    {
        _ready = false;
        return ReadAsync(_peeked ??= new byte[1]);
    }

    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<(int Bytes, SocketError Error)> SendAsync(byte[] buffer, int offset, int count)
    {
        try
        {
            await _tls.WriteAsync(buffer.AsMemory(offset, count)).ConfigureAwait(false);
            return (count, SocketError.Success);
        }
        catch (Exception ex) when (IsTransportFailure(ex))
        {
            return (0, ErrorOf(ex));
        }
    }

    /// <inheritdoc/>
    public override void EndStream(SocketShutdown how) => _ = EndStreamAsync(how);

    /// <inheritdoc/>
    public override void Dispose()
    {
        // The stream gives its buffers back; the socket closes, whether or not the stream owns it.
        _tls.Dispose();
        base.Dispose();
    }

    private static bool IsTransportFailure(Exception ex)
        => ex is IOException or SocketException or ObjectDisposedException or AuthenticationException;

    /// <summary>The socket error under a failure of the stream: a TLS failure (a bad record, an alert) ends the
    /// connection as an abort would.</summary>
    private static SocketError ErrorOf(Exception ex) => ex switch
    {
        SocketException socket => socket.SocketErrorCode,
        IOException { InnerException: SocketException socket } => socket.SocketErrorCode,
        ObjectDisposedException or IOException { InnerException: ObjectDisposedException } => SocketError.OperationAborted,
        _ => SocketError.ConnectionAborted,
    };

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<(int Bytes, SocketError Error)> ReadAsync(Memory<byte> buffer)
    {
        try
        {
            return (await _tls.ReadAsync(buffer).ConfigureAwait(false), SocketError.Success);
        }
        catch (Exception ex) when (IsTransportFailure(ex))
        {
            return (0, ErrorOf(ex));
        }
    }

    /// <summary>Sends close_notify, then ends the socket's stream; only the owed end of a stream that sent all it had.</summary>
    private async Task EndStreamAsync(SocketShutdown how)
    {
        try
        {
            await _tls.ShutdownAsync().ConfigureAwait(false);
        }
        catch (Exception ex) when (IsTransportFailure(ex) || ex is InvalidOperationException)
        {
            // Closed, reset or failed meanwhile: the socket's shutdown below is all that is left to do.
        }

        Shutdown(how);
    }
}
