using System.Buffers;
using System.Net;
using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>Reads a PROXY protocol header off a socket without taking a byte past it: it peeks at what has arrived, lets
/// the <see cref="ProxyHeaderParser"/> say how much of it is header, and receives exactly that much.</summary>
internal static class ProxyHeaderReader
{
    // A v1 line fits; a v2 header with TLVs takes a few peeks.
    private const int PeekSize = 128;

    /// <summary>Reads the header the connection starts with.</summary>
    /// <returns>The client's address; <see langword="null"/> when the header keeps the socket's (v1 UNKNOWN, v2 LOCAL).</returns>
    /// <exception cref="InvalidDataException">The bytes are not a PROXY header.</exception>
    /// <exception cref="EndOfStreamException">The client closed before the header's end.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    /// <exception cref="SocketException">The connection failed.</exception>
    public static async Task<IPEndPoint?> ReadAsync(Socket socket, CancellationToken cancellationToken)
    {
        var parser = new ProxyHeaderParser();
        byte[] buffer = ArrayPool<byte>.Shared.Rent(PeekSize);
        try
        {
            while (parser.Status == ProxyHeaderStatus.NeedMore)
            {
                int peeked = await socket.ReceiveAsync(buffer.AsMemory(0, PeekSize), SocketFlags.Peek, cancellationToken).ConfigureAwait(false);
                if (peeked == 0)
                {
                    throw new EndOfStreamException("The client closed before the end of its PROXY header.");
                }

                int header = parser.Consume(buffer.AsSpan(0, peeked));

                // What was peeked is there already: these receives return at once.
                for (int taken = 0; taken < header;)
                {
                    int received = await socket.ReceiveAsync(buffer.AsMemory(taken, header - taken), SocketFlags.None, cancellationToken).ConfigureAwait(false);
                    taken += received > 0 ? received : throw new EndOfStreamException("The client closed in its PROXY header.");
                }
            }

            return parser.Status == ProxyHeaderStatus.Complete ? parser.Source : throw new InvalidDataException("The connection does not start with a well-formed PROXY header.");
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(buffer);
        }
    }
}
