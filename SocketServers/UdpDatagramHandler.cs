namespace SocketServers;

/// <summary>A protocol over UDP for a <see cref="UdpServer"/>: answers each datagram, in place, with a reply of any
/// length up to <see cref="UdpServerOptions.MaxDatagramSize"/>, or none.</summary>
/// <remarks>
/// One handler serves every datagram of a server, called from its receive threads (or its reply block) at once, so
/// it keeps no per-datagram state in fields. It runs on the thread that received the datagram and the reply is sent
/// as it returns: it must not block. A reply that needs asynchronous work is deferred
/// (<see cref="UdpDatagram.DeferReply"/>) and sent when that work is done. Datagrams that could start an endless
/// exchange with another service are dropped before a handler sees them.
/// </remarks>
public abstract class UdpDatagramHandler
{
    /// <summary>What <see cref="OnDatagram"/> returns to send no reply. A reply of length 0 is an empty datagram.</summary>
    public const int NoReply = -1;

    /// <summary>Answers one datagram: writes the reply into <see cref="UdpDatagram.Buffer"/>, which starts with the
    /// datagram itself, and returns its length.</summary>
    /// <param name="datagram">The datagram, the buffer for the reply and the sender; valid during the call only.</param>
    /// <returns>The reply's length, from 0 (an empty datagram) to the buffer's length, or <see cref="NoReply"/> for
    /// none. Any other value is a fault: the datagram is dropped, as when the handler throws.</returns>
    public abstract int OnDatagram(UdpDatagram datagram);
}
