using System.Net;
using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>
/// A connection's byte I/O, all of it: park until data comes with no buffer, receive into a buffer, peek, send, end
/// the stream, reset, and look for unread input. <see cref="SocketTransport"/> runs on the socket and its pooled args;
/// <see cref="TlsTransport"/> on an authenticated <see cref="System.Net.Security.SslStream"/> over the socket.
/// </summary>
/// <remarks>Waits, receives and sends are the connection's loop's, one at a time; <see cref="Shutdown"/>,
/// <see cref="Reset"/>, <see cref="EndStream"/> and the queries may come from any thread.</remarks>
internal abstract class ConnectionTransport
{
    private protected ConnectionTransport(Socket socket, EndPoint? remoteEndPoint)
    {
        Socket = socket;
        RemoteEndPoint = remoteEndPoint ?? socket.RemoteEndPoint;
    }

    /// <summary>Gets the socket under the connection.</summary>
    public Socket Socket { get; }

    /// <summary>Gets the client's address as the server reports it.</summary>
    public EndPoint? RemoteEndPoint { get; }

    /// <summary>Waits until data or the end of the stream has come, holding no buffer.</summary>
    /// <returns><see cref="SocketError.Success"/>, or the error that ended the connection.</returns>
    public abstract ValueTask<SocketError> WaitAsync();

    /// <summary>As <see cref="WaitAsync()"/>, but <paramref name="cancellationToken"/> ends the wait early, with success.</summary>
    public abstract ValueTask<SocketError> WaitAsync(CancellationToken cancellationToken);

    /// <summary>Takes what has come into <paramref name="buffer"/> without waiting for more.</summary>
    /// <returns>The bytes taken (0 at the client's end of stream) and <see cref="SocketError.Success"/>;
    /// <see cref="SocketError.WouldBlock"/> when nothing is there now (wait again); else the error.</returns>
    public abstract ValueTask<(int Bytes, SocketError Error)> ReceiveAsync(byte[] buffer, int offset, int count);

    /// <summary>After a wait, whether input is there, without taking it into a pooled buffer.</summary>
    /// <returns>1 if input waits, 0 at the client's end of stream; <see cref="SocketError.WouldBlock"/> when the wait's
    /// readiness was stale.</returns>
    public abstract ValueTask<(int Bytes, SocketError Error)> PeekAsync();

    /// <summary>Sends up to <paramref name="count"/> bytes; the caller sends the rest.</summary>
    /// <returns>The bytes the transport took, and the error.</returns>
    public abstract ValueTask<(int Bytes, SocketError Error)> SendAsync(byte[] buffer, int offset, int count);

    /// <summary>Sends up to <paramref name="headCount"/> bytes of <paramref name="head"/> and then of <paramref name="body"/>
    /// in one send where the transport can gather them; the caller sends the rest.</summary>
    /// <returns>The bytes the transport took, head first, and the error.</returns>
    public virtual ValueTask<(int Bytes, SocketError Error)> SendAsync(byte[]? head, int headOffset, int headCount, ArraySegment<byte> body)
        => headCount > 0 ? SendAsync(head!, headOffset, headCount) : SendAsync(body.Array!, body.Offset, body.Count);

    /// <summary>Ends the stream after what was sent (for TLS, with close_notify); <paramref name="how"/> says whether the
    /// receive side is shut too.</summary>
    public abstract void EndStream(SocketShutdown how);

    /// <summary>Shuts the socket down, which makes a pending wait complete; nothing if it is closed already.</summary>
    public void Shutdown(SocketShutdown how)
    {
        try
        {
            Socket.Shutdown(how);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Already closed or reset: nothing left to shut down.
        }
    }

    /// <summary>Closes the socket with a reset, not an end of stream: what the kernel still holds to send is dropped.</summary>
    public void Reset()
    {
        try
        {
            Socket.LingerState = new LingerOption(enable: true, seconds: 0);
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            // Closed meanwhile: nothing left to reset.
        }

        Socket.Dispose();
    }

    /// <summary>Gets the bytes received that the kernel holds unread, or <see langword="null"/> once the socket is closed
    /// or reset.</summary>
    public int? UnreadBytes()
    {
        try
        {
            return Socket.Available;
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            return null;
        }
    }

    /// <summary>Closes the socket; a pending operation completes with an error.</summary>
    public virtual void Dispose() => Socket.Dispose();
}
