using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Unicode;
using SocketServers;

namespace Samples;

/// <summary>A line protocol: each line comes back upper-cased and numbered per connection; "quit" closes.</summary>
public sealed class UppercaseHandler : TcpConnectionHandler
{
    private static readonly DelimitedFrameReader s_lines = DelimitedFrameReader.Line(maxFrameLength: 4096);
    private static readonly byte[] s_tooLong = "line too long\n"u8.ToArray();

    public override ValueTask OnConnectedAsync(TcpConnection connection)
    {
        connection.State = new Session();
        return default;
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))] // no allocation when a write waits
    public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
    {
        var session = (Session)connection.State!;
        int consumed = 0;
        FrameStatus status;
        while ((status = s_lines.TryReadFrame(data.Span[consumed..], out Range frame, out int length)) == FrameStatus.Complete)
        {
            ReadOnlyMemory<byte> line = data[consumed..][frame]; // memory, not a span: it lives across an await
            consumed += length;
            if (line.Span.SequenceEqual("quit"u8))
            {
                connection.Close();
                return data.Length;
            }

            Utf8.TryWrite(session.Reply, $"{++session.Lines}: ", out int head);
            Ascii.ToUpper(line.Span, session.Reply.AsSpan(head), out int body);
            session.Reply[head + body] = (byte)'\n';
            await connection.WriteAsync(session.Reply.AsMemory(0, head + body + 1));
        }

        if (status == FrameStatus.TooLong)
        {
            await connection.WriteAsync(s_tooLong); // then close: where the next line starts is unknown
            connection.Close();
            return data.Length;
        }

        return consumed; // a line not ended yet comes again with what follows it
    }

    private sealed class Session { public int Lines; public readonly byte[] Reply = new byte[4096 + 16]; }
}
