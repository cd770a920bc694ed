namespace SocketServers.Internal;

/// <summary>Where a <see cref="ProxyHeaderParser"/> stands.</summary>
internal enum ProxyHeaderStatus
{
    /// <summary>The bytes so far may begin a header; more are needed.</summary>
    NeedMore,

    /// <summary>The header is complete.</summary>
    Complete,

    /// <summary>The bytes are not a PROXY header; the connection is to be closed.</summary>
    Invalid,
}
