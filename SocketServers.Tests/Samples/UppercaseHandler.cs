using System.Text;
using System.Text.Unicode;
using SocketServers;

namespace Samples;

/// <summary>A line protocol: each line comes back upper-cased and numbered per connection; "quit" closes.</summary>
public sealed class UppercaseHandler : TcpConnectionHandler
{
    public override ValueTask OnConnectedAsync(TcpConnection connection)
    {
        connection.State = new Session();
        return default;
    }

    public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
    {
        var session = (Session)connection.State!;
        int consumed = 0;
        while (data.Span[consumed..].IndexOf((byte)'\n') is var end and >= 0)
        {
            ReadOnlyMemory<byte> line = data.Slice(consumed, end);
            consumed += end + 1;
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

        return consumed; // a line not ended yet comes again with what follows it
    }

    private sealed class Session { public int Lines; public readonly byte[] Reply = new byte[8192 + 16]; }
}
