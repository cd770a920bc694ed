namespace SocketServers.Echo;

/// <summary>RFC 862 over UDP: the reply is the datagram itself, already in the reply buffer.</summary>
internal sealed class EchoDatagramHandler : UdpDatagramHandler
{
    /// <summary>Gets the one instance; the handler keeps no state.</summary>
    public static EchoDatagramHandler Instance { get; } = new();

    public override int OnDatagram(UdpDatagram datagram) => datagram.Length;
}
