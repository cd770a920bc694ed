namespace SocketServers.Resp;

/// <summary>What <see cref="RespRequestParser.TryParse"/> found at the start of its input.</summary>
internal enum RespParseStatus
{
    /// <summary>A whole request, to execute.</summary>
    Complete,

    /// <summary>The start of a request; more input is needed.</summary>
    Incomplete,

    /// <summary>A request with more arguments than the parser keeps: it is consumed whole and refused.</summary>
    TooManyArguments,

    /// <summary>An array length that is not a number from 0 to the limit; the stream cannot be resynchronised.</summary>
    InvalidMultibulkLength,

    /// <summary>A bulk length that is not a number from 0 to the limit; the stream cannot be resynchronised.</summary>
    InvalidBulkLength,

    /// <summary>An array element that is not a bulk string; the stream cannot be resynchronised.</summary>
    ExpectedBulk,

    /// <summary>A bulk string not followed by CRLF; the stream cannot be resynchronised.</summary>
    UnterminatedBulk,

    /// <summary>A line with no CRLF within the longest line allowed; the stream cannot be resynchronised.</summary>
    UnterminatedLine,

    /// <summary>A request that would not fit in the receive buffer; the stream cannot be resynchronised.</summary>
    RequestTooLarge,
}
