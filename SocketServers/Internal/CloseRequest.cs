namespace SocketServers.Internal;

/// <summary>Why the server closes a connection, if it does (see <see cref="CloseHandshake"/>).</summary>
internal enum CloseRequest
{
    /// <summary>The server is not closing the connection.</summary>
    None,

    /// <summary>The server stops: what was read is handled and sent, then the stream ends.</summary>
    Stop,

    /// <summary>The idle sweep cut it off.</summary>
    IdleClose,

    /// <summary>The stop's grace period ended: the socket is closed under the loop.</summary>
    Aborted,

    /// <summary>Evicted, slow, to make room for a waiting client.</summary>
    Evicted,

    /// <summary>The handler closed it: the stream ends, then the connection lingers.</summary>
    HandlerClose,
}
