namespace SocketServers.Resp;

/// <summary>What the RESP sample keeps for one connection (its <see cref="TcpConnection.State"/>): the parsed arguments
/// and the buffers replies are formatted in, made once so that requests allocate nothing.</summary>
internal sealed class RespSession
{
    /// <summary>The most arguments a request may have; DEL and EXISTS take as many keys.</summary>
    public const int MaxArguments = 256;

    /// <summary>Gets the offsets and lengths of the current request's arguments; room for a few at first, grown by
    /// <see cref="GrowArguments"/> up to <see cref="MaxArguments"/>.</summary>
    public (int Start, int Length)[] Arguments { get; private set; } = new (int, int)[8];

    /// <summary>Gets the buffer a reply's header (<c>$5\r\n</c>, <c>:42\r\n</c>) is formatted in.</summary>
    public byte[] Header { get; } = new byte[32];

    /// <summary>Makes room for <paramref name="count"/> arguments, if that is at most <see cref="MaxArguments"/>.</summary>
    /// <returns>Whether there is room now.</returns>
    public bool GrowArguments(int count)
    {
        if (count > MaxArguments)
        {
            return false;
        }

        Arguments = new (int, int)[Math.Max(count, 2 * Arguments.Length)];
        return true;
    }

    /// <summary>The buffer a value is copied to out of the store; grown to the longest value read.</summary>
    public byte[] Value = new byte[64];
}
