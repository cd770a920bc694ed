namespace SocketServers.Internal;

/// <summary>Where a connection's loop is, as the close handshake sees it (see <see cref="CloseHandshake"/>).</summary>
internal enum ConnectionPhase
{
    /// <summary>Handling what it reads: the loop sees a close request before its next read.</summary>
    Handling,

    /// <summary>Waiting for data with nothing owed: a close requester may end the stream itself.</summary>
    Waiting,

    /// <summary>The stream has ended; input is discarded or the connection lingers.</summary>
    Ended,
}
