namespace SocketServers.Resp;

/// <summary>What <see cref="RespRequestParser.TryParse"/> found at the start of its input.</summary>
internal enum RespParseStatus
{
    /// <summary>A whole request, to execute.</summary>
    Complete,

    /// <summary>The start of a request; more input is needed.</summary>
    Incomplete,

    /// <summary>A whole request with more arguments than the span given has room for; parse it again with room for them all.</summary>
    TooManyArguments,

    /// <summary>A whole inline command with quotes: its line is to be copied and split by
    /// <see cref="RespRequestParser.TryParseQuotedInline"/>.</summary>
    QuotedInline,

    /// <summary>An inline command with a quote left open, or a closing quote not followed by a space; the stream cannot be
    /// resynchronised.</summary>
    UnbalancedQuotes,

    /// <summary>An array length that is not a number, or over <see cref="int.MaxValue"/>; the stream cannot be resynchronised.</summary>
    InvalidMultibulkLength,

    /// <summary>A bulk length that is not a number from 0 to <see cref="RespRequestParser.MaxBulkLength"/>; the stream cannot
    /// be resynchronised.</summary>
    InvalidBulkLength,

    /// <summary>An array element that is not a bulk string; the stream cannot be resynchronised.</summary>
    ExpectedBulk,

    /// <summary>A bulk string not followed by CRLF; the stream cannot be resynchronised.</summary>
    UnterminatedBulk,

    /// <summary>An array header line with no CRLF within <see cref="RespRequestParser.MaxHeaderLine"/>; the stream cannot
    /// be resynchronised.</summary>
    MultibulkCountTooLong,

    /// <summary>A bulk header line with no CRLF within <see cref="RespRequestParser.MaxHeaderLine"/>; the stream cannot
    /// be resynchronised.</summary>
    BulkCountTooLong,

    /// <summary>A header line too long, before it is known to be an array's or a bulk's (never returned by
    /// <see cref="RespRequestParser.TryParse"/>).</summary>
    CountLineTooLong,

    /// <summary>An inline command with no LF within <see cref="RespRequestParser.MaxInlineLine"/> or the receive buffer;
    /// the stream cannot be resynchronised.</summary>
    InlineTooLong,

    /// <summary>A request longer than the handler's limit (the receive buffer): its array, bulk lengths or bytes tell;
    /// the stream cannot be resynchronised.</summary>
    RequestTooLarge,
}
