using System.Globalization;
using System.Text;

namespace SocketServers.Tests;

/// <summary>Just enough of RESP, the Redis protocol, to talk to a real redis-server: a command as an array of bulk
/// strings, and one reply read whole.</summary>
internal static class Resp
{
    /// <summary>Encodes a command: <c>*2\r\n$3\r\nGET\r\n$1\r\nk\r\n</c>.</summary>
    public static byte[] Command(params string[] arguments)
    {
        var command = new StringBuilder().Append(CultureInfo.InvariantCulture, $"*{arguments.Length}\r\n");
        foreach (string argument in arguments)
        {
            command.Append(CultureInfo.InvariantCulture, $"${Encoding.UTF8.GetByteCount(argument)}\r\n{argument}\r\n");
        }

        return Encoding.UTF8.GetBytes(command.ToString());
    }

    /// <summary>Sends a command on a pooled connection and reads its reply.</summary>
    public static async Task<string> CallAsync(TcpClientConnection connection, CancellationToken cancellationToken, params string[] arguments)
    {
        await connection.SendAsync(Command(arguments), cancellationToken);
        return await ReadReplyAsync(connection.ReceiveAsync, cancellationToken);
    }

    /// <summary>Reads one reply: a simple string, error or integer as its line (<c>+PONG</c>, <c>-ERR ...</c>,
    /// <c>:1</c>), a bulk string as its content, a missing one as <c>$-1</c>.</summary>
    /// <exception cref="EndOfStreamException">The server ended its stream before the reply was whole.</exception>
    public static async Task<string> ReadReplyAsync(Func<Memory<byte>, CancellationToken, ValueTask<int>> receive, CancellationToken cancellationToken)
    {
        byte[] buffer = new byte[64 * 1024];
        int length = 0;
        while (true)
        {
            int read = await receive(buffer.AsMemory(length), cancellationToken);
            if (read == 0)
            {
                throw new EndOfStreamException($"the server ended its stream after {length} bytes of a reply");
            }

            length += read;
            string received = Encoding.UTF8.GetString(buffer, 0, length);
            int lineEnd = received.IndexOf("\r\n", StringComparison.Ordinal);
            if (lineEnd < 0)
            {
                continue;
            }

            string line = received[..lineEnd];
            if (line[0] != '$' || line == "$-1")
            {
                return line;
            }

            int size = int.Parse(line.AsSpan(1), CultureInfo.InvariantCulture);
            if (received.Length >= lineEnd + 2 + size + 2)
            {
                return received.Substring(lineEnd + 2, size);
            }
        }
    }
}
