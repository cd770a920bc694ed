namespace SocketServers.Resp;

/// <summary>The replies of the RESP sample that never change, in Redis's words, made once.</summary>
internal static class RespReplies
{
    public static readonly byte[] Pong = "+PONG\r\n"u8.ToArray();
    public static readonly byte[] Ok = "+OK\r\n"u8.ToArray();
    public static readonly byte[] Nil = "$-1\r\n"u8.ToArray();
    public static readonly byte[] EmptyArray = "*0\r\n"u8.ToArray();
    public static readonly byte[] Crlf = "\r\n"u8.ToArray();
    public static readonly byte[] ConfigSave = "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"u8.ToArray();
    public static readonly byte[] ConfigAppendOnly = "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"u8.ToArray();
    public static readonly byte[] UnknownCommand = "-ERR unknown command '"u8.ToArray();
    public static readonly byte[] UnknownCommandEnd = "'\r\n"u8.ToArray();
    public static readonly byte[] Syntax = "-ERR syntax error\r\n"u8.ToArray();
    public static readonly byte[] NotInteger = "-ERR value is not an integer or out of range\r\n"u8.ToArray();
    public static readonly byte[] InvalidExpireTime = "-ERR invalid expire time in 'set' command\r\n"u8.ToArray();
    public static readonly byte[] Overflow = "-ERR increment or decrement would overflow\r\n"u8.ToArray();
    public static readonly byte[] OutOfMemory = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"u8.ToArray();
    public static readonly byte[] Unfinished = "-ERR Protocol error: unfinished request at end of input\r\n"u8.ToArray();

    private static readonly byte[] s_invalidMultibulk = "-ERR Protocol error: invalid multibulk length\r\n"u8.ToArray();
    private static readonly byte[] s_invalidBulk = "-ERR Protocol error: invalid bulk length\r\n"u8.ToArray();
    private static readonly byte[] s_expectedBulk = "-ERR Protocol error: expected '$'\r\n"u8.ToArray();
    private static readonly byte[] s_unterminatedBulk = "-ERR Protocol error: bulk string not ended by CRLF\r\n"u8.ToArray();
    private static readonly byte[] s_multibulkCountTooLong = "-ERR Protocol error: too big mbulk count string\r\n"u8.ToArray();
    private static readonly byte[] s_bulkCountTooLong = "-ERR Protocol error: too big bulk count string\r\n"u8.ToArray();
    private static readonly byte[] s_inlineTooLong = "-ERR Protocol error: too big inline request\r\n"u8.ToArray();
    private static readonly byte[] s_unbalancedQuotes = "-ERR Protocol error: unbalanced quotes in request\r\n"u8.ToArray();

    /// <summary>The error for a request larger than <paramref name="maxRequestSize"/>, which names the limit: Redis
    /// accepts larger ones, so the limit, not the request, is the cause.</summary>
    public static byte[] RequestTooLarge(int maxRequestSize)
        => System.Text.Encoding.ASCII.GetBytes($"-ERR Protocol error: request larger than this server's limit of {maxRequestSize} bytes\r\n");

    /// <summary>The error for input that breaks the protocol, in Redis's words where Redis has them.</summary>
    /// <param name="status">What the parser found.</param>
    /// <param name="requestTooLarge">The reply to <see cref="RespParseStatus.RequestTooLarge"/>.</param>
    public static byte[] Refusal(RespParseStatus status, byte[] requestTooLarge) => status switch
    {
        RespParseStatus.InvalidMultibulkLength => s_invalidMultibulk,
        RespParseStatus.InvalidBulkLength => s_invalidBulk,
        RespParseStatus.ExpectedBulk => s_expectedBulk,
        RespParseStatus.UnterminatedBulk => s_unterminatedBulk,
        RespParseStatus.MultibulkCountTooLong => s_multibulkCountTooLong,
        RespParseStatus.BulkCountTooLong => s_bulkCountTooLong,
        RespParseStatus.InlineTooLong => s_inlineTooLong,
        RespParseStatus.UnbalancedQuotes => s_unbalancedQuotes,
        _ => requestTooLarge,
    };
}
