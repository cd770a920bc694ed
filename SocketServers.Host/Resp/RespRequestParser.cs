namespace SocketServers.Resp;

/// <summary>
/// Reads one RESP2 request from the start of a buffer: an array of bulk strings (<c>*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n</c>),
/// as clients send, or an inline command (<c>PING\r\n</c>), as typed into telnet. It allocates nothing: the arguments are
/// offsets into the input, or, for an inline command with quotes, into the caller's copy of its line, unquoted in place.
/// </summary>
internal static class RespRequestParser
{
    /// <summary>The longest array or bulk header line (<c>$1048576</c> is 8 bytes), CRLF excluded; a longer one is not RESP.</summary>
    public const int MaxHeaderLine = 32;

    /// <summary>The longest inline command, CRLF excluded, as Redis's (<c>PROTO_INLINE_MAX_SIZE</c>).</summary>
    public const int MaxInlineLine = 64 * 1024;

    /// <summary>The longest bulk string Redis reads (its <c>proto-max-bulk-len</c>); a longer one is invalid, where a
    /// shorter one that passes the request limit is too large.</summary>
    public const long MaxBulkLength = 512L * 1024 * 1024;

    private static readonly DelimitedFrameReader s_headerLine = new("\r\n"u8, MaxHeaderLine);
    private static readonly DelimitedFrameReader s_inlineLine = DelimitedFrameReader.Line(MaxInlineLine);

    /// <summary>Parses the request at the start of <paramref name="input"/>.</summary>
    /// <param name="input">The bytes received and not yet consumed.</param>
    /// <param name="arguments">Where the arguments' offsets and lengths in <paramref name="input"/> go.</param>
    /// <param name="maxRequestSize">The longest request accepted, in bytes: the connection's receive buffer.</param>
    /// <param name="consumed">The request's length, when <see cref="RespParseStatus.Complete"/>,
    /// <see cref="RespParseStatus.TooManyArguments"/> or <see cref="RespParseStatus.QuotedInline"/>.</param>
    /// <param name="count">How many arguments the request has; not counted for <see cref="RespParseStatus.QuotedInline"/>.</param>
    /// <returns>What the input starts with.</returns>
    public static RespParseStatus TryParse(ReadOnlySpan<byte> input, Span<(int Start, int Length)> arguments, int maxRequestSize, out int consumed, out int count)
    {
        RespParseStatus status = TryParseRequest(input, arguments, maxRequestSize, out consumed, out count);

        // A buffer full of a request's start never holds the rest, wherever in the request it ends.
        return status == RespParseStatus.Incomplete && input.Length >= maxRequestSize ? RespParseStatus.RequestTooLarge : status;
    }

    /// <summary>
    /// Splits an inline command's line, which <see cref="TryParse"/> found to hold quotes, as Redis does: "double quotes"
    /// with the escapes <c>\n \r \t \b \a \xHH</c> and <c>\</c> before any other byte, 'single quotes' with <c>\'</c>.
    /// Undoes them in place: an argument is never longer than the text it came from.
    /// </summary>
    /// <param name="line">A copy of the line, with its LF (or CRLF); overwritten.</param>
    /// <param name="arguments">Where the arguments' offsets and lengths in <paramref name="line"/> go.</param>
    /// <param name="count">How many arguments the line has.</param>
    /// <returns><see cref="RespParseStatus.Complete"/>, <see cref="RespParseStatus.TooManyArguments"/> (the line is then
    /// half undone: copy it again), or <see cref="RespParseStatus.UnbalancedQuotes"/>.</returns>
    public static RespParseStatus TryParseQuotedInline(Span<byte> line, Span<(int Start, int Length)> arguments, out int count)
    {
        int end = line.Length;
        end -= end > 0 && line[end - 1] == (byte)'\n' ? 1 : 0;
        end -= end > 0 && line[end - 1] == (byte)'\r' ? 1 : 0;
        int read = 0;
        int write = 0;
        count = 0;
        while (true)
        {
            while (read < end && IsSpace(line[read]))
            {
                read++;
            }

            if (read == end)
            {
                return count > arguments.Length ? RespParseStatus.TooManyArguments : RespParseStatus.Complete;
            }

            int start = write;
            if (!TryUndoArgument(line, end, ref read, ref write))
            {
                return RespParseStatus.UnbalancedQuotes;
            }

            if (count < arguments.Length)
            {
                arguments[count] = (start, write - start);
            }

            count++;
        }
    }

    /// <summary>Undoes one argument of a quoted inline line, from <paramref name="read"/> to the space or end after it,
    /// writing it at <paramref name="write"/>.</summary>
    /// <returns>Whether its quotes balance, and a closing quote is followed by a space or the line's end.</returns>
    private static bool TryUndoArgument(Span<byte> line, int end, ref int read, ref int write)
    {
        byte quote = 0;
        while (true)
        {
            if (quote == 0)
            {
                if (read == end || line[read] is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n')
                {
                    return true;
                }

                if (line[read] is (byte)'"' or (byte)'\'')
                {
                    quote = line[read++];
                }
                else
                {
                    line[write++] = line[read++];
                }

                continue;
            }

            if (read == end)
            {
                return false;
            }

            if (line[read] == quote)
            {
                // A closing quote ends the argument: only a space or the end of the line may follow it.
                return ++read == end || IsSpace(line[read]);
            }

            // Each step writes at most one byte and reads at least one, so it never overwrites what it has yet to read.
            if (line[read] == (byte)'\\' && read + 1 < end && (quote == (byte)'"' || line[read + 1] == (byte)'\''))
            {
                UndoEscape(line, end, quote, ref read, ref write);
                continue;
            }

            line[write++] = line[read++];
        }
    }

    /// <summary>Undoes the escape at <paramref name="read"/> (a backslash and what follows it) inside <paramref name="quote"/>.</summary>
    private static void UndoEscape(Span<byte> line, int end, byte quote, ref int read, ref int write)
    {
        if (quote == (byte)'"' && line[read + 1] == (byte)'x' && read + 3 < end
            && byte.TryParse(line.Slice(read + 2, 2), System.Globalization.NumberStyles.AllowHexSpecifier, null, out byte value))
        {
            line[write++] = value;
            read += 4;
            return;
        }

        line[write++] = line[read + 1] switch
        {
            (byte)'n' => (byte)'\n',
            (byte)'r' => (byte)'\r',
            (byte)'t' => (byte)'\t',
            (byte)'b' => (byte)'\b',
            (byte)'a' => (byte)'\a',
            byte other => other,
        };
        read += 2;
    }

    private static RespParseStatus TryParseRequest(ReadOnlySpan<byte> input, Span<(int Start, int Length)> arguments, int maxRequestSize, out int consumed, out int count)
    {
        consumed = 0;
        count = 0;
        if (input.IsEmpty)
        {
            return RespParseStatus.Incomplete;
        }

        if (input[0] != (byte)'*')
        {
            return TryParseInline(input, arguments, maxRequestSize, out consumed, out count);
        }

        RespParseStatus status = TryReadNumber(input, 0, out long elements, out int position);
        if (status != RespParseStatus.Complete)
        {
            return status == RespParseStatus.CountLineTooLong ? RespParseStatus.MultibulkCountTooLong : status;
        }

        if (elements > int.MaxValue)
        {
            return RespParseStatus.InvalidMultibulkLength;
        }

        if (elements <= 0)
        {
            consumed = position; // a null or empty array, which Redis reads as nothing to do
            return RespParseStatus.Complete;
        }

        if (elements > maxRequestSize / 6)
        {
            return RespParseStatus.RequestTooLarge; // each bulk string takes 6 bytes at least: $0, CRLF, CRLF
        }

        for (int i = 0; i < elements; i++)
        {
            status = TryReadBulk(input, position, maxRequestSize, out int start, out int length);
            if (status != RespParseStatus.Complete)
            {
                return status;
            }

            if (i < arguments.Length)
            {
                arguments[i] = (start, length);
            }

            position = start + length + 2;
        }

        consumed = position;
        count = (int)elements;
        return count > arguments.Length ? RespParseStatus.TooManyArguments : RespParseStatus.Complete;
    }

    /// <summary>Reads the bulk string at <paramref name="at"/>: its header, its bytes and their CRLF.</summary>
    /// <returns><see cref="RespParseStatus.Complete"/> with where its bytes lie, <see cref="RespParseStatus.Incomplete"/>,
    /// or why it breaks the protocol.</returns>
    private static RespParseStatus TryReadBulk(ReadOnlySpan<byte> input, int at, int maxRequestSize, out int start, out int length)
    {
        length = 0;
        start = 0;
        if (at >= input.Length)
        {
            return RespParseStatus.Incomplete;
        }

        if (input[at] != (byte)'$')
        {
            return RespParseStatus.ExpectedBulk;
        }

        RespParseStatus status = TryReadNumber(input, at, out long declared, out start);
        if (status != RespParseStatus.Complete)
        {
            return status switch
            {
                RespParseStatus.InvalidMultibulkLength => RespParseStatus.InvalidBulkLength,
                RespParseStatus.CountLineTooLong => RespParseStatus.BulkCountTooLong,
                _ => status,
            };
        }

        if (declared is < 0 or > MaxBulkLength)
        {
            return RespParseStatus.InvalidBulkLength;
        }

        long end = start + declared + 2;
        if (end > maxRequestSize)
        {
            return RespParseStatus.RequestTooLarge;
        }

        if (end > input.Length)
        {
            return RespParseStatus.Incomplete;
        }

        if (input[(int)end - 2] != (byte)'\r' || input[(int)end - 1] != (byte)'\n')
        {
            return RespParseStatus.UnterminatedBulk;
        }

        length = (int)declared;
        return RespParseStatus.Complete;
    }

    /// <summary>Reads the number after the type byte at <paramref name="at"/>, up to its CRLF.</summary>
    /// <returns><see cref="RespParseStatus.Complete"/>, <see cref="RespParseStatus.Incomplete"/>,
    /// <see cref="RespParseStatus.CountLineTooLong"/>, or <see cref="RespParseStatus.InvalidMultibulkLength"/> for a line
    /// that is not a number.</returns>
    private static RespParseStatus TryReadNumber(ReadOnlySpan<byte> input, int at, out long value, out int next)
    {
        value = 0;
        next = 0;
        switch (s_headerLine.TryReadFrame(input[(at + 1)..], out Range line, out int length))
        {
            case FrameStatus.Incomplete:
                return RespParseStatus.Incomplete;
            case FrameStatus.TooLong:
                return RespParseStatus.CountLineTooLong;
        }

        if (!RespInteger.TryParse(input[(at + 1)..][line], out value))
        {
            return RespParseStatus.InvalidMultibulkLength;
        }

        next = at + 1 + length;
        return RespParseStatus.Complete;
    }

    /// <summary>An inline command: words separated by spaces, ended by LF (or CRLF).</summary>
    private static RespParseStatus TryParseInline(ReadOnlySpan<byte> input, Span<(int Start, int Length)> arguments, int maxRequestSize, out int consumed, out int count)
    {
        consumed = 0;
        count = 0;
        FrameStatus line = s_inlineLine.TryReadFrame(input, out Range text, out int lineLength);
        if (line != FrameStatus.Complete)
        {
            // Too long for Redis, or for the buffer.
            return line == FrameStatus.TooLong || input.Length >= maxRequestSize ? RespParseStatus.InlineTooLong : RespParseStatus.Incomplete;
        }

        int textEnd = text.End.Value;
        if (input[..textEnd].IndexOfAny((byte)'"', (byte)'\'') >= 0)
        {
            consumed = lineLength;
            return RespParseStatus.QuotedInline;
        }

        int position = 0;
        while (position < textEnd)
        {
            while (position < textEnd && input[position] is (byte)' ' or (byte)'\t')
            {
                position++;
            }

            int start = position;
            while (position < textEnd && input[position] is not ((byte)' ' or (byte)'\t'))
            {
                position++;
            }

            if (position > start)
            {
                if (count < arguments.Length)
                {
                    arguments[count] = (start, position - start);
                }

                count++;
            }
        }

        consumed = lineLength;
        return count > arguments.Length ? RespParseStatus.TooManyArguments : RespParseStatus.Complete;
    }

    /// <summary>What C's <c>isspace</c> says is a space, as Redis splits an inline command.</summary>
    private static bool IsSpace(byte character) => character is (byte)' ' or (byte)'\t' or (byte)'\n' or (byte)'\v' or (byte)'\f' or (byte)'\r';
}
