using System.Text;
using SocketServers;

namespace Samples;

/// <summary>Asks a Redis server whether it is there: PING, and the one line it answers ("+PONG").</summary>
public static class RedisPing
{
    private static readonly byte[] s_ping = "PING\r\n"u8.ToArray();

    public static async ValueTask<string> PingAsync(TcpClientConnection connection, CancellationToken cancellationToken)
    {
        await connection.SendAsync(s_ping, cancellationToken);
        byte[] reply = new byte[64];
        int length = 0;
        while (length == 0 || reply[length - 1] != '\n')
        {
            int read = await connection.ReceiveAsync(reply.AsMemory(length), cancellationToken);
            length += read > 0 ? read : throw new EndOfStreamException("the server closed the connection");
        }

        return Encoding.ASCII.GetString(reply, 0, length - 2);
    }
}
