using System.Buffers;
using System.Buffers.Text;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Text;

namespace SocketServers.Resp;

/// <summary>
/// A Redis-protocol (RESP2) server in memory: PING, ECHO, SET (with NX, XX, EX, PX, EXAT, PXAT, KEEPTTL), GET, DEL,
/// EXISTS, INCR, TTL, PTTL, QUIT, and the CONFIG GET and COMMAND that redis-cli and redis-benchmark send as they
/// connect. Any other command gets an error reply; a request that breaks the protocol gets an error reply and the
/// connection closes, since the stream cannot be resynchronised.
/// </summary>
internal sealed class RespConnectionHandler : TcpConnectionHandler
{
    private readonly RespStore _store;
    private readonly int _maxRequestSize;
    private readonly byte[] _requestTooLarge;

    /// <summary>Creates the handler over a store of its own.</summary>
    /// <param name="maxRequestSize">The longest request accepted: the server's <see cref="TcpServerOptions.MaxMessageSize"/>.</param>
    public RespConnectionHandler(int maxRequestSize)
        : this(new RespStore(), maxRequestSize)
    {
    }

    /// <summary>Creates the handler over <paramref name="store"/>.</summary>
    /// <param name="store">The keys and values.</param>
    /// <param name="maxRequestSize">The longest request accepted: the server's <see cref="TcpServerOptions.MaxMessageSize"/>.</param>
    public RespConnectionHandler(RespStore store, int maxRequestSize)
    {
        ArgumentNullException.ThrowIfNull(store);
        ArgumentOutOfRangeException.ThrowIfLessThan(maxRequestSize, 1);
        _store = store;
        _maxRequestSize = maxRequestSize;
        _requestTooLarge = RespReplies.RequestTooLarge(maxRequestSize);
    }

    /// <summary>Gets the keys and values.</summary>
    public RespStore Store => _store;

    public override ValueTask OnConnectedAsync(TcpConnection connection)
    {
        connection.State = new RespSession();
        return default;
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
    {
        var session = (RespSession)connection.State!;
        int consumed = 0;
        while (consumed < data.Length)
        {
            ReadOnlyMemory<byte> rest = data[consumed..];
            RespParseStatus status = RespRequestParser.TryParse(rest.Span, session.Arguments, _maxRequestSize, out int length, out int count);
            if (status == RespParseStatus.Incomplete)
            {
                break;
            }

            consumed += length;
            bool goOn = status switch
            {
                RespParseStatus.Complete => count == 0 || await ExecuteAsync(connection, session, rest[..length], session.Arguments, count).ConfigureAwait(false),
                RespParseStatus.TooManyArguments => await ExecuteWithRoomAsync(connection, session, rest[..length], count).ConfigureAwait(false),
                RespParseStatus.QuotedInline => await ExecuteQuotedInlineAsync(connection, session, rest[..length]).ConfigureAwait(false),
                _ => await RefuseAsync(connection, RespReplies.Refusal(status, _requestTooLarge)).ConfigureAwait(false),
            };
            if (!goOn)
            {
                connection.Close();
                return data.Length;
            }
        }

        return consumed;
    }

    public override ValueTask OnInputEndedAsync(TcpConnection connection, ReadOnlyMemory<byte> unconsumed)
        => connection.WriteAsync(RespReplies.Unfinished);

    /// <summary>Says why a request breaks the protocol; the connection then closes, since where the next request starts is unknown.</summary>
    /// <returns><see langword="false"/>: do not go on.</returns>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private static async ValueTask<bool> RefuseAsync(TcpConnection connection, byte[] error)
    {
        await connection.WriteAsync(error).ConfigureAwait(false);
        return false;
    }

    /// <summary>A request with more arguments than the session has room for: parsed again into room rented for its handling.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<bool> ExecuteWithRoomAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> request, int count)
    {
        (int Start, int Length)[] arguments = ArrayPool<(int, int)>.Shared.Rent(count);
        try
        {
            RespParseStatus status = RespRequestParser.TryParse(request.Span, arguments, _maxRequestSize, out _, out count);
            Debug.Assert(status == RespParseStatus.Complete, "The request parsed whole before.");
            return await ExecuteAsync(connection, session, request, arguments, count).ConfigureAwait(false);
        }
        finally
        {
            ArrayPool<(int, int)>.Shared.Return(arguments);
        }
    }

    /// <summary>An inline command with quotes: its line copied to a rented buffer and unquoted there, as Redis splits it.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<bool> ExecuteQuotedInlineAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> line)
    {
        byte[] text = ArrayPool<byte>.Shared.Rent(line.Length);
        (int Start, int Length)[] arguments = session.Arguments;
        try
        {
            line.Span.CopyTo(text);
            RespParseStatus status = RespRequestParser.TryParseQuotedInline(text.AsSpan(0, line.Length), arguments, out int count);
            if (status == RespParseStatus.TooManyArguments)
            {
                arguments = ArrayPool<(int, int)>.Shared.Rent(count);
                line.Span.CopyTo(text);
                status = RespRequestParser.TryParseQuotedInline(text.AsSpan(0, line.Length), arguments, out count);
            }

            return status != RespParseStatus.Complete
                ? await RefuseAsync(connection, RespReplies.Refusal(status, _requestTooLarge)).ConfigureAwait(false)
                : count == 0 || await ExecuteAsync(connection, session, text.AsMemory(0, line.Length), arguments, count).ConfigureAwait(false);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(text);
            if (arguments != session.Arguments)
            {
                ArrayPool<(int, int)>.Shared.Return(arguments);
            }
        }
    }

    /// <summary>Executes one request and writes its reply.</summary>
    /// <returns>Whether to go on: not after QUIT.</returns>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<bool> ExecuteAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> request, (int Start, int Length)[] arguments, int count)
    {
        RespCommand command = Identify(request.Span.Slice(arguments[0].Start, arguments[0].Length));
        switch (command)
        {
            case RespCommand.Get when count == 2:
                await GetAsync(connection, session, Argument(request, arguments, 1)).ConfigureAwait(false);
                break;
            case RespCommand.Set when count >= 3:
                await connection.WriteAsync(Set(request, arguments, count)).ConfigureAwait(false);
                break;
            case RespCommand.Ttl or RespCommand.Pttl when count == 2:
                long ttl = _store.TimeToLive(Argument(request, arguments, 1).Span);
                await WriteIntegerAsync(connection, session, command == RespCommand.Pttl || ttl < 0 ? ttl : (ttl + 500) / 1000).ConfigureAwait(false);
                break;
            case RespCommand.Ping when count == 1:
                await connection.WriteAsync(RespReplies.Pong).ConfigureAwait(false);
                break;
            case RespCommand.Ping or RespCommand.Echo when count == 2:
                await WriteBulkAsync(connection, session, Argument(request, arguments, 1)).ConfigureAwait(false);
                break;
            case RespCommand.Incr when count == 2:
                await (_store.Increment(Argument(request, arguments, 1).Span, out long value) switch
                {
                    RespStore.IncrementOutcome.Done => WriteIntegerAsync(connection, session, value),
                    RespStore.IncrementOutcome.Overflow => connection.WriteAsync(RespReplies.Overflow),
                    RespStore.IncrementOutcome.OutOfMemory => connection.WriteAsync(RespReplies.OutOfMemory),
                    _ => connection.WriteAsync(RespReplies.NotInteger),
                }).ConfigureAwait(false);
                break;
            case RespCommand.Del or RespCommand.Exists when count >= 2:
                await WriteIntegerAsync(connection, session, CountKeys(request, arguments, count, delete: command == RespCommand.Del)).ConfigureAwait(false);
                break;
            case RespCommand.Config:
                await WriteConfigAsync(connection, session, request, arguments, count).ConfigureAwait(false);
                break;
            case RespCommand.Command:
                // redis-cli asks for the commands' documentation as it starts; an empty list leaves it without hints.
                await connection.WriteAsync(RespReplies.EmptyArray).ConfigureAwait(false);
                break;
            case RespCommand.Quit:
                await connection.WriteAsync(RespReplies.Ok).ConfigureAwait(false);
                return false;
            case RespCommand.Unknown:
                await WriteUnknownCommandAsync(connection, session, Argument(request, arguments, 0)).ConfigureAwait(false);
                break;
            default:
                await WriteWrongArgumentsAsync(connection, session, Argument(request, arguments, 0).Span).ConfigureAwait(false);
                break;
        }

        return true;
    }

    private static RespCommand Identify(ReadOnlySpan<byte> name) => name.Length switch
    {
        3 when Ascii.EqualsIgnoreCase(name, "GET"u8) => RespCommand.Get,
        3 when Ascii.EqualsIgnoreCase(name, "SET"u8) => RespCommand.Set,
        3 when Ascii.EqualsIgnoreCase(name, "DEL"u8) => RespCommand.Del,
        3 when Ascii.EqualsIgnoreCase(name, "TTL"u8) => RespCommand.Ttl,
        4 when Ascii.EqualsIgnoreCase(name, "PING"u8) => RespCommand.Ping,
        4 when Ascii.EqualsIgnoreCase(name, "INCR"u8) => RespCommand.Incr,
        4 when Ascii.EqualsIgnoreCase(name, "ECHO"u8) => RespCommand.Echo,
        4 when Ascii.EqualsIgnoreCase(name, "QUIT"u8) => RespCommand.Quit,
        4 when Ascii.EqualsIgnoreCase(name, "PTTL"u8) => RespCommand.Pttl,
        6 when Ascii.EqualsIgnoreCase(name, "EXISTS"u8) => RespCommand.Exists,
        6 when Ascii.EqualsIgnoreCase(name, "CONFIG"u8) => RespCommand.Config,
        7 when Ascii.EqualsIgnoreCase(name, "COMMAND"u8) => RespCommand.Command,
        _ => RespCommand.Unknown,
    };

    /// <summary>GET: the value copied out of the store into the session's scratch buffer or, when longer, into a buffer
    /// rented until the reply is written, so that no connection keeps the largest value it ever read.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask GetAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> key)
    {
        byte[] buffer = session.Scratch;
        int length;
        while ((length = _store.CopyTo(key.Span, buffer)) > buffer.Length)
        {
            // Not copied: too long for the buffer. Again with room for it, since it may change meanwhile.
            if (buffer != session.Scratch)
            {
                ArrayPool<byte>.Shared.Return(buffer);
            }

            buffer = ArrayPool<byte>.Shared.Rent(length);
        }

        try
        {
            await (length < 0 ? connection.WriteAsync(RespReplies.Nil) : WriteBulkAsync(connection, session, buffer.AsMemory(0, length))).ConfigureAwait(false);
        }
        finally
        {
            if (buffer != session.Scratch)
            {
                ArrayPool<byte>.Shared.Return(buffer);
            }
        }
    }

    private static ReadOnlyMemory<byte> Argument(ReadOnlyMemory<byte> request, (int Start, int Length)[] arguments, int index)
        => request.Slice(arguments[index].Start, arguments[index].Length);

    /// <summary>SET, with its options: the reply, OK, nil when NX or XX did not hold, or an error.</summary>
    private byte[] Set(ReadOnlyMemory<byte> request, (int Start, int Length)[] arguments, int count)
    {
        var options = new RespSetOptions(RespStore.SetCondition.Always, 0);
        if (count > 3 && RespSetOptions.TryParse(request.Span, arguments.AsSpan(3, count - 3), _store.Now, out options) is { } error)
        {
            return error;
        }

        return _store.Set(Argument(request, arguments, 1).Span, Argument(request, arguments, 2).Span, options.Condition, options.ExpiresAt) switch
        {
            RespStore.SetOutcome.Done => RespReplies.Ok,
            RespStore.SetOutcome.NotSet => RespReplies.Nil,
            _ => RespReplies.OutOfMemory,
        };
    }

    /// <summary>DEL or EXISTS: how many of the keys were there (and are now removed, for DEL).</summary>
    private long CountKeys(ReadOnlyMemory<byte> request, (int Start, int Length)[] arguments, int count, bool delete)
    {
        long found = 0;
        for (int i = 1; i < count; i++)
        {
            ReadOnlySpan<byte> key = Argument(request, arguments, i).Span;
            found += (delete ? _store.Remove(key) : _store.Contains(key)) ? 1 : 0;
        }

        return found;
    }

    /// <summary>CONFIG GET, for the two settings redis-benchmark reads as it starts; anything else is an empty list.</summary>
    private static ValueTask WriteConfigAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> request, (int Start, int Length)[] arguments, int count)
    {
        if (count < 2)
        {
            return WriteWrongArgumentsAsync(connection, session, "config"u8);
        }

        if (count != 3 || !Ascii.EqualsIgnoreCase(request.Span.Slice(arguments[1].Start, arguments[1].Length), "GET"u8))
        {
            return connection.WriteAsync(RespReplies.Syntax);
        }

        ReadOnlySpan<byte> parameter = request.Span.Slice(arguments[2].Start, arguments[2].Length);
        return connection.WriteAsync(
            Ascii.EqualsIgnoreCase(parameter, "save"u8) ? RespReplies.ConfigSave
            : Ascii.EqualsIgnoreCase(parameter, "appendonly"u8) ? RespReplies.ConfigAppendOnly
            : RespReplies.EmptyArray);
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private static async ValueTask WriteBulkAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> value)
    {
        session.Header[0] = (byte)'$';
        Utf8Formatter.TryFormat(value.Length, session.Header.AsSpan(1), out int written);
        session.Header[written + 1] = (byte)'\r';
        session.Header[written + 2] = (byte)'\n';
        await connection.WriteAsync(session.Header.AsMemory(0, written + 3)).ConfigureAwait(false);
        await connection.WriteAsync(value).ConfigureAwait(false);
        await connection.WriteAsync(RespReplies.Crlf).ConfigureAwait(false);
    }

    private static ValueTask WriteIntegerAsync(TcpConnection connection, RespSession session, long value)
    {
        session.Header[0] = (byte)':';
        Utf8Formatter.TryFormat(value, session.Header.AsSpan(1), out int written);
        session.Header[written + 1] = (byte)'\r';
        session.Header[written + 2] = (byte)'\n';
        return connection.WriteAsync(session.Header.AsMemory(0, written + 3));
    }

    /// <summary>The error for a known command given the wrong number of arguments, naming it in lower case as Redis does.</summary>
    private static ValueTask WriteWrongArgumentsAsync(TcpConnection connection, RespSession session, ReadOnlySpan<byte> name)
    {
        Span<byte> message = session.Scratch;
        int length = Append(message, 0, "-ERR wrong number of arguments for '"u8);
        Ascii.ToLower(name, message[length..], out int written);
        length = Append(message, length + written, "' command\r\n"u8);
        return connection.WriteAsync(session.Scratch.AsMemory(0, length));

        static int Append(Span<byte> message, int at, ReadOnlySpan<byte> text)
        {
            text.CopyTo(message[at..]);
            return at + text.Length;
        }
    }

    /// <summary>The error for a command this server does not have, naming it with its printable characters only.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private static async ValueTask WriteUnknownCommandAsync(TcpConnection connection, RespSession session, ReadOnlyMemory<byte> name)
    {
        await connection.WriteAsync(RespReplies.UnknownCommand).ConfigureAwait(false);
        int length = Math.Min(name.Length, session.Scratch.Length);
        Span<byte> printable = session.Scratch.AsSpan(0, length);
        name.Span[..length].CopyTo(printable);
        foreach (ref byte character in printable)
        {
            if (character is < 0x20 or > 0x7e or (byte)'\'')
            {
                character = (byte)'?';
            }
        }

        await connection.WriteAsync(session.Scratch.AsMemory(0, length)).ConfigureAwait(false);
        await connection.WriteAsync(RespReplies.UnknownCommandEnd).ConfigureAwait(false);
    }
}
