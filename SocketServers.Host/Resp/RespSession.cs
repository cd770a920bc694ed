namespace SocketServers.Resp;

/// <summary>What the RESP sample keeps for one connection (its <see cref="TcpConnection.State"/>): room for a request's
/// arguments and the buffers replies are formatted in, made once so that requests allocate nothing. Fixed in size: a
/// request that needs more rents it for its own handling, so an idle connection holds no more than this.</summary>
internal sealed class RespSession
{
    /// <summary>How many arguments a request finds room for here; one with more (DEL or EXISTS of many keys) rents room.</summary>
    public const int ArgumentsKept = 16;

    /// <summary>Gets room for the offsets and lengths of a request's arguments.</summary>
    public (int Start, int Length)[] Arguments { get; } = new (int, int)[ArgumentsKept];

    /// <summary>Gets the buffer a reply's header (<c>$5\r\n</c>, <c>:42\r\n</c>) is formatted in.</summary>
    public byte[] Header { get; } = new byte[32];

    /// <summary>Gets the buffer a value no longer than it is copied to out of the store, and an unknown command's name
    /// to, as much of it as fits: Redis names at most 128 bytes of it too.</summary>
    public byte[] Scratch { get; } = new byte[128];
}
