using System.Buffers.Text;
using System.Text;

namespace PoolBench.Connections;

/// <summary>
/// The minimal RESP client of the <c>connections</c> scenario: the SET and GET that redis-benchmark sends by default
/// (<c>-t set,get</c>, key <c>key:__rand_int__</c>, a 3-byte value of <c>x</c>), each written once as the bytes of its
/// request, and the one reply each must get back, which <see cref="ReplyLength"/> tells complete.
/// </summary>
internal sealed class RespCommand
{
    /// <summary>The key redis-benchmark uses without <c>-r</c>.</summary>
    public const string Key = "key:__rand_int__";

    /// <summary>The value redis-benchmark sets by default (<c>-d 3</c>).</summary>
    public const string Value = "xxx";

    /// <summary>Large enough for either reply, or for an error line that redis-server sends instead.</summary>
    public const int ReplyBufferSize = 512;

    private readonly byte[] _request;
    private readonly byte[] _reply;

    private RespCommand(string test, string request, string reply)
    {
        Test = test;
        _request = Encoding.ASCII.GetBytes(request);
        _reply = Encoding.ASCII.GetBytes(reply);
    }

    public static RespCommand Set { get; } = new("SET", $"*3\r\n$3\r\nSET\r\n${Key.Length}\r\n{Key}\r\n${Value.Length}\r\n{Value}\r\n", "+OK\r\n");

    public static RespCommand Get { get; } = new("GET", $"*2\r\n$3\r\nGET\r\n${Key.Length}\r\n{Key}\r\n", $"${Value.Length}\r\n{Value}\r\n");

    /// <summary>SET, then GET: redis-benchmark's order, so that each GET finds the value.</summary>
    public static IReadOnlyList<RespCommand> Both { get; } = [Set, Get];

    /// <summary>The test's name as redis-benchmark prints it.</summary>
    public string Test { get; }

    public ReadOnlyMemory<byte> Request => _request;

    /// <summary>Whether <paramref name="reply"/>, a complete reply, is the one this command must get.</summary>
    public bool IsExpected(ReadOnlySpan<byte> reply) => reply.SequenceEqual(_reply);

    /// <summary>
    /// The length of the complete reply at the start of <paramref name="received"/>, or 0 while more of it is to come:
    /// a simple string, an error or an integer is one line; a bulk string is a line with its length, that many bytes
    /// and a line end (no bytes for the null bulk string, <c>$-1</c>).
    /// </summary>
    /// <exception cref="InvalidDataException">The reply is of another kind, or its length line is not a number.</exception>
    public static int ReplyLength(ReadOnlySpan<byte> received)
    {
        int lineEnd = received.IndexOf("\r\n"u8);
        if (lineEnd < 0)
        {
            return 0;
        }

        switch (received[0])
        {
            case (byte)'+' or (byte)'-' or (byte)':':
                return lineEnd + 2;
            case (byte)'$' when Utf8Parser.TryParse(received[1..lineEnd], out int length, out int consumed) && consumed == lineEnd - 1 && length >= -1:
                int total = length < 0 ? lineEnd + 2 : lineEnd + 2 + length + 2;
                return received.Length >= total ? total : 0;
            default:
                throw new InvalidDataException($"not a reply this client reads: '{Encoding.ASCII.GetString(received[..lineEnd])}'");
        }
    }
}
