namespace SocketServers;

/// <summary>A protocol over TCP for a <see cref="TcpServer"/>: it is told of each connection, handles the bytes each
/// one receives, and writes replies to it.</summary>
/// <remarks>
/// One handler serves every connection of a server; what belongs to one goes in its <see cref="TcpConnection.State"/>.
/// Calls for one connection come one at a time, in order, each after the task of the one before has completed, on
/// thread-pool threads; calls for different connections run at once. A call may await anything without holding a
/// thread. What a call writes is sent before the connection reads again, so a client that does not read its replies
/// stops being read. SocketServers/README.md gives the threading model and the backpressure rule.
/// </remarks>
public abstract class TcpConnectionHandler
{
    /// <summary>Called once for each connection, before anything it sends is handled: set up its
    /// <see cref="TcpConnection.State"/>, or greet the client. What it writes is sent when it completes.</summary>
    /// <param name="connection">The new connection.</param>
    /// <returns>A task that completes when the connection may be read.</returns>
    public virtual ValueTask OnConnectedAsync(TcpConnection connection) => default;

    /// <summary>Handles what the connection has received: any whole messages at the start of <paramref name="data"/>,
    /// each of which it may reply to with <see cref="TcpConnection.WriteAsync"/>.</summary>
    /// <param name="connection">The connection.</param>
    /// <param name="data">The bytes received and not yet consumed, oldest first: what an earlier call left, then what
    /// came since. Valid until the returned task completes.</param>
    /// <returns>How many bytes from the start of <paramref name="data"/> it consumed, 0 to its length. The rest is
    /// handed over again, with what comes next, at the following call. When it consumes nothing of a full buffer, the
    /// buffer grows, doubling, up to <see cref="TcpConnection.MaxMessageSize"/>; a message that outgrows that, or that
    /// finds the server's budget for grown buffers spent, ends at <see cref="OnMessageTooLargeAsync"/>.</returns>
    public abstract ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data);

    /// <summary>Called when input ends with bytes no call consumed, a message the client began and did not finish: the
    /// client ended its stream, or the server is stopping. What it writes is sent before the stream ends.</summary>
    /// <param name="connection">The connection.</param>
    /// <param name="unconsumed">The bytes left over; valid until the returned task completes.</param>
    /// <returns>A task that completes when it is done.</returns>
    public virtual ValueTask OnInputEndedAsync(TcpConnection connection, ReadOnlyMemory<byte> unconsumed) => default;

    /// <summary>Called when a message cannot be received whole: nothing was consumed of a full buffer that can grow no
    /// more, as it holds <see cref="TcpConnection.MaxMessageSize"/> bytes or the server's budget for grown buffers is
    /// spent. What it writes (an error reply) is sent; then the connection closes as after <see cref="TcpConnection.Close"/>,
    /// and the message, and whatever the client sends after it, is dropped. It never waits for room.</summary>
    /// <param name="connection">The connection.</param>
    /// <param name="pending">The bytes of the message received so far; valid until the returned task completes.</param>
    /// <returns>A task that completes when it is done. The default writes nothing.</returns>
    public virtual ValueTask OnMessageTooLargeAsync(TcpConnection connection, ReadOnlyMemory<byte> pending) => default;

    /// <summary>Called once, last, when the connection has closed: release what its <see cref="TcpConnection.State"/>
    /// holds. It must not throw or block.</summary>
    /// <param name="connection">The connection, which can no longer be written to.</param>
    public virtual void OnClosed(TcpConnection connection)
    {
    }
}
