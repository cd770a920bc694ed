using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;

namespace SocketServers.Tests;

/// <summary>
/// Sends IPv4 UDP datagrams with a source address and port of the test's choosing, as an attacker who spoofs the
/// sender does: a raw socket (which needs root, or CAP_NET_RAW) with the IP header built here.
/// </summary>
/// <remarks>The kernel fills in the IP header's checksum and length; the UDP checksum is 0, "none", which IPv4
/// receivers accept.</remarks>
internal sealed class ForgedDatagramSender : IDisposable
{
    private const int IPv4HeaderBytes = 20;
    private const int UdpHeaderBytes = 8;
    private const byte UdpProtocol = 17;

    private readonly Socket _raw;

    private ForgedDatagramSender(Socket raw) => _raw = raw;

    /// <summary>Opens a raw socket; the test is inconclusive where this process may not.</summary>
    public static ForgedDatagramSender OpenOrInconclusive()
    {
        try
        {
            // IPPROTO_RAW: the caller writes the IP header, and the socket receives nothing.
            return new ForgedDatagramSender(new Socket(AddressFamily.InterNetwork, SocketType.Raw, ProtocolType.Raw));
        }
        catch (SocketException ex) when (ex.SocketErrorCode is SocketError.AccessDenied or SocketError.ProtocolNotSupported or SocketError.SocketNotSupported)
        {
            Assert.Inconclusive($"sending a datagram with a forged source needs a raw socket, which this process may not open ({ex.SocketErrorCode})");
            throw;
        }
    }

    /// <summary>Sends <paramref name="payload"/> to <paramref name="destination"/> as if from <paramref name="source"/>.</summary>
    public void Send(IPEndPoint source, IPEndPoint destination, ReadOnlySpan<byte> payload)
    {
        byte[] packet = new byte[IPv4HeaderBytes + UdpHeaderBytes + payload.Length];
        Span<byte> ip = packet.AsSpan(0, IPv4HeaderBytes);
        ip[0] = 0x45; // version 4, header of 5 words
        BinaryPrimitives.WriteUInt16BigEndian(ip[2..], (ushort)packet.Length);
        ip[8] = 64; // time to live
        ip[9] = UdpProtocol;
        source.Address.TryWriteBytes(ip[12..16], out _);
        destination.Address.TryWriteBytes(ip[16..20], out _);

        Span<byte> udp = packet.AsSpan(IPv4HeaderBytes);
        BinaryPrimitives.WriteUInt16BigEndian(udp, (ushort)source.Port);
        BinaryPrimitives.WriteUInt16BigEndian(udp[2..], (ushort)destination.Port);
        BinaryPrimitives.WriteUInt16BigEndian(udp[4..], (ushort)(UdpHeaderBytes + payload.Length));
        payload.CopyTo(udp[UdpHeaderBytes..]);

        _raw.SendTo(packet, new IPEndPoint(destination.Address, 0));
    }

    public void Dispose() => _raw.Dispose();
}
