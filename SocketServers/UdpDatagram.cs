using System.Net;

namespace SocketServers;

/// <summary>A datagram handed to <see cref="UdpDatagramHandler.OnDatagram"/>: its bytes, the buffer its reply is written
/// to, and its sender. Valid during that call only: the buffer and the endpoint are reused for the next datagram.</summary>
public readonly ref struct UdpDatagram
{
    internal UdpDatagram(Span<byte> buffer, int length, EndPoint remoteEndPoint)
    {
        Buffer = buffer;
        Length = length;
        RemoteEndPoint = remoteEndPoint;
    }

    /// <summary>Gets the datagram's bytes: the first <see cref="Length"/> bytes of <see cref="Buffer"/>.</summary>
    public ReadOnlySpan<byte> Data => Buffer[..Length];

    /// <summary>Gets the buffer the datagram is in and the reply goes to, <see cref="UdpServerOptions.MaxDatagramSize"/>
    /// bytes long. A reply may overwrite the datagram as it goes.</summary>
    public Span<byte> Buffer { get; }

    /// <summary>Gets the datagram's length in bytes.</summary>
    public int Length { get; }

    /// <summary>Gets the sender, which the reply goes to. The server updates this instance in place for the next
    /// datagram: copy it (<c>new IPEndPoint(address, port)</c>) to keep it.</summary>
    public EndPoint RemoteEndPoint { get; }
}
