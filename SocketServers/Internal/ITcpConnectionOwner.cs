using Microsoft.Extensions.Logging;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>What a <see cref="SocketConnection"/> needs from the server that accepted it, and nothing more.</summary>
internal interface ITcpConnectionOwner
{
    /// <summary>Gets the protocol the connection serves.</summary>
    TcpConnectionHandler Handler { get; }

    /// <summary>Gets where the connection logs.</summary>
    ILogger Logger { get; }

    /// <summary>Gets the server's counts, to which the connection adds its echoes, drops and eviction.</summary>
    LiveCounters Count { get; }

    /// <summary>Gets the receive buffers, one lent to a connection while it has input; the take never waits.</summary>
    Pool<byte[]> Buffers { get; }

    /// <summary>Gets the buffers a receive grows into while a message outgrows its buffer, within a budget.</summary>
    LargeMessageBuffers LargeBuffers { get; }

    /// <summary>Gets the send buffers, one lent to a connection while it has output; the take never waits.</summary>
    Pool<byte[]> SendBuffers { get; }

    /// <summary>Gets the clock connections time their activity by. Tests pass one they move by hand.</summary>
    MillisecondClock Clock { get; }

    /// <summary>Gets the limiter of the warnings about failing connections, shared by all of them.</summary>
    LogRateLimiter ConnectionWarnings { get; }

    /// <summary>Counts an exception out of the handler's calls (or the connection's own loop), which closes the connection.</summary>
    /// <param name="exception">What was thrown.</param>
    void OnHandlerFailed(Exception exception);

    /// <summary>Counts a message that could not be received whole, which closes the connection.</summary>
    /// <param name="reason"><c>max_message_size</c> or <c>memory_budget</c>.</param>
    void OnMessageTooLarge(string reason);

    /// <summary>Called once, when the connection has closed its socket and is done with its args: the server forgets it
    /// and takes the args back.</summary>
    /// <param name="connection">The connection.</param>
    /// <param name="duration">How long it was open.</param>
    void OnConnectionClosed(SocketConnection connection, TimeSpan duration);
}
