using System.Net;
using System.Net.Sockets;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>A datagram handed to <see cref="UdpDatagramHandler.OnDatagram"/>: its bytes, the buffer its reply is written
/// to, and its sender. Valid during that call only: the buffer and the endpoint are reused for the next datagram, unless
/// the reply is deferred (<see cref="DeferReply"/>).</summary>
public readonly ref struct UdpDatagram
{
    private readonly IUdpReplyOwner? _owner;
    private readonly Socket? _socket;
    private readonly PooledSocketArgs? _args;

    internal UdpDatagram(Span<byte> buffer, int length, EndPoint remoteEndPoint, IUdpReplyOwner owner, Socket socket, PooledSocketArgs args)
    {
        Buffer = buffer;
        Length = length;
        RemoteEndPoint = remoteEndPoint;
        _owner = owner;
        _socket = socket;
        _args = args;
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

    /// <summary>Keeps the datagram, its buffer and its sender past the handler's call, so that the reply can be sent
    /// after asynchronous work (a lookup, a call to another service) without holding the receiving thread. What
    /// <see cref="UdpDatagramHandler.OnDatagram"/> returns is then ignored (return
    /// <see cref="UdpDatagramHandler.NoReply"/>); the reply goes when the handle's <see cref="UdpDeferredReply.Send"/>
    /// is called, an empty datagram for a length of 0, or none on its <see cref="UdpDeferredReply.Dispose"/>.</summary>
    /// <returns>The reply, which must be sent or disposed: until then it holds a pooled buffer, and a stopping server
    /// waits for it up to its stop grace period. A handler that throws after deferring is reported as faulted, and
    /// the reply still waits for its handle.</returns>
    /// <exception cref="InvalidOperationException">The reply to this datagram is deferred already, or the datagram was
    /// not handed over by a server.</exception>
    public UdpDeferredReply DeferReply()
    {
        if (_args is null)
        {
            throw new InvalidOperationException("Only a datagram a UDP server handed to its handler can have its reply deferred.");
        }

        _args.Deferral ??= new UdpReplyDeferral(_args, _owner!);
        return _args.Deferral.Defer(_socket!, Length, Buffer.Length);
    }
}
