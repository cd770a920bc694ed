using System.Net;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// The reply to a datagram whose handler deferred it with <see cref="UdpDatagram.DeferReply"/>, to send once asynchronous
/// work is done: the datagram's buffer and sender stay the handler's until <see cref="Send"/> or <see cref="Dispose"/>.
/// </summary>
/// <remarks>
/// Either may be called from any thread, once: after that the handle is stale, and every member but
/// <see cref="Dispose"/> throws, as they do on a default instance. Each deferred reply holds a pooled buffer; when
/// <see cref="UdpServerOptions.MaxPendingDatagrams"/> of them are out, and one more for each receive, the server
/// receives no more until one ends.
/// </remarks>
public readonly struct UdpDeferredReply : IDisposable
{
    private readonly UdpReplyDeferral? _deferral;
    private readonly int _token;

    internal UdpDeferredReply(UdpReplyDeferral deferral, int token)
    {
        _deferral = deferral;
        _token = token;
    }

    /// <summary>Gets the datagram's bytes: the start of <see cref="Buffer"/>, until the reply overwrites them.</summary>
    /// <exception cref="InvalidOperationException">The reply was sent or disposed.</exception>
    public ReadOnlyMemory<byte> Data => Deferral.Data(_token);

    /// <summary>Gets the buffer the reply is written to, <see cref="UdpServerOptions.MaxDatagramSize"/> bytes long,
    /// which starts with the datagram.</summary>
    /// <exception cref="InvalidOperationException">The reply was sent or disposed.</exception>
    public Memory<byte> Buffer => Deferral.Buffer(_token);

    /// <summary>Gets the sender, which the reply goes to; it stays the same until the reply ends, and then changes in
    /// place with the args' next datagram: copy it (<c>new IPEndPoint(address, port)</c>) to keep it.</summary>
    /// <exception cref="InvalidOperationException">The reply was sent or disposed.</exception>
    public EndPoint RemoteEndPoint => Deferral.RemoteEndPoint(_token);

    /// <summary>Sends the first <paramref name="length"/> bytes of <see cref="Buffer"/> to the sender, and gives the buffer
    /// back. The send waits only while the socket's send buffer is full; one that fails is counted and logged as a
    /// synchronous reply's would be, not thrown.</summary>
    /// <param name="length">The reply's length, from 0 (an empty datagram) to the length of <see cref="Buffer"/>.
    /// <see cref="Dispose"/> sends none.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="length"/> is negative or over the length of
    /// <see cref="Buffer"/>; the reply is still pending.</exception>
    /// <exception cref="InvalidOperationException">The reply was sent or disposed already.</exception>
    public void Send(int length)
    {
        UdpReplyDeferral deferral = Deferral;
        deferral.ThrowIfEnded(_token);
        ArgumentOutOfRangeException.ThrowIfNegative(length);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(length, deferral.BufferLength);
        if (!deferral.TryEnd(_token, length, failure: null))
        {
            deferral.ThrowIfEnded(_token);
        }
    }

    /// <summary>Ends the reply without sending anything, unless it has ended already, and gives the buffer back.</summary>
    public void Dispose() => _deferral?.TryEnd(_token, UdpDatagramHandler.NoReply, failure: null);

    private UdpReplyDeferral Deferral => _deferral ?? throw new InvalidOperationException("This reply was not deferred by a UDP server.");
}
