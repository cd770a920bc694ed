using System.Net;

namespace SocketServers;

/// <summary>One TCP connection as a <see cref="TcpConnectionHandler"/> sees it: who it is with, the state the handler
/// keeps for it, and the writes, flush and close of its replies.</summary>
/// <remarks>
/// <see cref="WriteAsync"/> and <see cref="FlushAsync"/> are for the handler's calls for this connection, one at a time;
/// <see cref="Close"/> and the properties may be used from any thread.
/// </remarks>
public abstract class TcpConnection
{
    private protected TcpConnection()
    {
    }

    /// <summary>Gets the connection's number, unique within its server, as log lines show it.</summary>
    public abstract long Id { get; }

    /// <summary>Gets the client's address and port, or <see langword="null"/> if the socket could not say.</summary>
    public abstract EndPoint? RemoteEndPoint { get; }

    /// <summary>Gets the size of the connection's receive buffer, <see cref="TcpServerOptions.BufferSize"/>: the most bytes
    /// one receive reads before they are handled, and the size beyond which a message needs a grown buffer.</summary>
    public abstract int BufferSize { get; }

    /// <summary>Gets the longest message the connection can receive, <see cref="TcpServerOptions.MaxMessageSize"/>: a
    /// message of which nothing is consumed while it fills a buffer this large ends at
    /// <see cref="TcpConnectionHandler.OnMessageTooLargeAsync"/>.</summary>
    public abstract int MaxMessageSize { get; }

    /// <summary>Gets or sets what the handler keeps for this connection (a parser's state, a session); <see langword="null"/>
    /// at first. The server never reads it.</summary>
    public object? State { get; set; }

    /// <summary>Writes <paramref name="data"/> to the connection: copies it to the send buffer, which is sent when it
    /// fills, when the handler's call returns, or on <see cref="FlushAsync"/>. Bytes of the data the handler's call
    /// was given are sent from the receive buffer instead, without a copy.</summary>
    /// <param name="data">The bytes; the caller may reuse them once the task has completed.</param>
    /// <returns>A task that completes, most often at once, when the bytes are buffered or sent; it waits while the
    /// kernel's send buffer is full, which is the backpressure on a client that does not read.</returns>
    /// <exception cref="ObjectDisposedException">The connection has closed.</exception>
    /// <exception cref="IOException">The connection failed or was reset while sending; it then closes.</exception>
    public abstract ValueTask WriteAsync(ReadOnlyMemory<byte> data);

    /// <summary>Sends what has been written and not sent yet, then <paramref name="data"/>, memory the handler owns (a
    /// stored value), without copying it, whatever its length: a small header written before it and the data leave
    /// in one send where the transport can gather them (plaintext; TLS writes them in order).</summary>
    /// <param name="data">The bytes; the caller must not change them until the task has completed. Memory not backed
    /// by an array is copied, as <see cref="WriteAsync"/> copies.</param>
    /// <returns>A task that completes when the kernel has taken every byte, and the memory may be reused; it waits
    /// while the kernel's send buffer is full, the same backpressure as <see cref="WriteAsync"/>.</returns>
    /// <remarks>Each call sends at once: replies to pipelined requests that <see cref="WriteAsync"/> would buffer into
    /// one send go out in one send each, so for small data the copy of <see cref="WriteAsync"/> is cheaper.</remarks>
    /// <exception cref="ObjectDisposedException">The connection has closed.</exception>
    /// <exception cref="IOException">The connection failed or was reset while sending; it then closes.</exception>
    public abstract ValueTask WriteOwnedAsync(ReadOnlyMemory<byte> data);

    /// <summary>Sends what has been written and not sent yet.</summary>
    /// <returns>A task that completes when the kernel has taken every byte.</returns>
    /// <exception cref="ObjectDisposedException">The connection has closed.</exception>
    /// <exception cref="IOException">The connection failed or was reset while sending; it then closes.</exception>
    public abstract ValueTask FlushAsync();

    /// <summary>Gets a token that is cancelled when the server cuts the connection off without waiting for the handler (the
    /// stop grace period ended, the idle timeout, an eviction for a waiting client) or when the connection has closed.
    /// A handler that awaits other work passes it on, so that a cut-off ends its call, and may let the resulting
    /// <see cref="OperationCanceledException"/> out: after a cut-off it is not counted as the handler's failure. Its
    /// callbacks run on the thread pool.</summary>
    public abstract CancellationToken ConnectionClosed { get; }

    /// <summary>Closes the connection once the current call has returned: what was written is sent, the stream ends,
    /// and nothing more the client sends is read. The connection ends when the client closes, or about a second
    /// later, when the server resets it. Calling it again, or after the connection closed, does nothing.</summary>
    public abstract void Close();
}
