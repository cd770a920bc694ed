using System.Buffers.Binary;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace SocketServers.Internal;

/// <summary>
/// Reads one PROXY protocol header (HAProxy's v1 text line or v2 binary block) from the bytes a connection starts with,
/// fed in pieces of any size. It takes only the header's own bytes, so what follows is left to the protocol, and it
/// decides as early as it can that a header is malformed. A header that carries no usable address (v1 UNKNOWN, v2 LOCAL,
/// an unspecified or Unix family) completes with no <see cref="Source"/>: the socket's address stands.
/// </summary>
internal sealed class ProxyHeaderParser
{
    /// <summary>The longest v1 line, CRLF included, as the specification bounds it.</summary>
    public const int MaxV1Length = 107;

    // v2: the 12-byte signature, then version and command, family and transport, and the big-endian length of the rest.
    private const int V2FixedLength = 16;
    private const int V2Inet4Length = 12;
    private const int V2Inet6Length = 36;

    private static ReadOnlySpan<byte> V1Prefix => "PROXY "u8;

    private static ReadOnlySpan<byte> V2Signature => [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A];

    // The header's first bytes: a whole v1 line, or v2's fixed part and the address block (the TLVs after it are skipped).
    private readonly byte[] _kept = new byte[MaxV1Length];

    // Header bytes taken so far, and for v2, once its fixed part is in, the header's whole length.
    private int _length;
    private int _v2Length;

    /// <summary>Gets whether the header is complete, malformed, or wants more bytes.</summary>
    public ProxyHeaderStatus Status { get; private set; }

    /// <summary>Gets the client's address and port the complete header gives; <see langword="null"/> to keep the socket's.</summary>
    public IPEndPoint? Source { get; private set; }

    /// <summary>Takes the header's bytes from the start of <paramref name="bytes"/>, which follow those taken before.</summary>
    /// <param name="bytes">The connection's next bytes.</param>
    /// <returns>How many of them belong to the header; none once it is complete or malformed.</returns>
    public int Consume(ReadOnlySpan<byte> bytes)
    {
        // The first byte tells the versions apart: v1 begins with 'P', v2 with CR.
        int taken = 0;
        while (taken < bytes.Length && Status == ProxyHeaderStatus.NeedMore)
        {
            byte next = bytes[taken++];
            Status = (_length == 0 ? next : _kept[0]) == V2Signature[0] ? TakeV2(next) : TakeV1(next);
        }

        return taken;
    }

    private ProxyHeaderStatus TakeV1(byte next)
    {
        if (_length < V1Prefix.Length && next != V1Prefix[_length])
        {
            return ProxyHeaderStatus.Invalid;
        }

        _kept[_length++] = next;
        if (next == (byte)'\n')
        {
            return ParseV1(_kept.AsSpan(0, _length));
        }

        return _length < MaxV1Length ? ProxyHeaderStatus.NeedMore : ProxyHeaderStatus.Invalid;
    }

    private ProxyHeaderStatus TakeV2(byte next)
    {
        if (_length < V2Signature.Length && next != V2Signature[_length])
        {
            return ProxyHeaderStatus.Invalid;
        }

        if (_length < V2FixedLength + V2Inet6Length)
        {
            _kept[_length] = next;
        }

        _length++;
        if (_length == V2FixedLength)
        {
            int rest = BinaryPrimitives.ReadUInt16BigEndian(_kept.AsSpan(14, 2));
            if (!IsValidV2Start(_kept[12], _kept[13], rest))
            {
                return ProxyHeaderStatus.Invalid;
            }

            _v2Length = V2FixedLength + rest;
        }

        return _length >= V2FixedLength && _length == _v2Length ? CompleteV2() : ProxyHeaderStatus.NeedMore;
    }

    // Version 2; command LOCAL (0) or PROXY (1); for PROXY over IPv4 or IPv6, a stream transport and room for the addresses.
    private static bool IsValidV2Start(byte versionAndCommand, byte familyAndTransport, int rest)
    {
        int command = versionAndCommand & 0x0F;
        if (versionAndCommand >> 4 != 2 || command > 1)
        {
            return false;
        }

        int family = familyAndTransport >> 4;
        int transport = familyAndTransport & 0x0F;
        if (family > 3 || transport > 2)
        {
            return false;
        }

        return command == 0 || family is 0 or 3
            || (transport == 1 && rest >= (family == 1 ? V2Inet4Length : V2Inet6Length));
    }

    private ProxyHeaderStatus CompleteV2()
    {
        int family = _kept[13] >> 4;
        if ((_kept[12] & 0x0F) == 1 && family is 1 or 2)
        {
            int size = family == 1 ? 4 : 16;
            var address = new IPAddress(_kept.AsSpan(V2FixedLength, size));
            int port = BinaryPrimitives.ReadUInt16BigEndian(_kept.AsSpan(V2FixedLength + (2 * size), 2));
            Source = new IPEndPoint(address, port);
        }

        return ProxyHeaderStatus.Complete;
    }

    // "PROXY TCP4|TCP6 source destination sourceport destinationport\r\n", single spaces, or "PROXY UNKNOWN...\r\n".
    private ProxyHeaderStatus ParseV1(ReadOnlySpan<byte> line)
    {
        if (line.Length < 2 || line[^2] != (byte)'\r' || line.IndexOfAnyExceptInRange((byte)' ', (byte)'~') != line.Length - 2)
        {
            return ProxyHeaderStatus.Invalid;
        }

        string[] fields = Encoding.ASCII.GetString(line[..^2]).Split(' ');
        if (fields is [_, "UNKNOWN", ..])
        {
            return ProxyHeaderStatus.Complete;
        }

        if (fields is not [_, "TCP4" or "TCP6", string source, string destination, string sourcePort, string destinationPort])
        {
            return ProxyHeaderStatus.Invalid;
        }

        AddressFamily family = fields[1] == "TCP4" ? AddressFamily.InterNetwork : AddressFamily.InterNetworkV6;
        if (!IsAddress(source, family) || !IsAddress(destination, family) || ParsePort(sourcePort) is not { } port || ParsePort(destinationPort) is null)
        {
            return ProxyHeaderStatus.Invalid;
        }

        Source = new IPEndPoint(IPAddress.Parse(source), port);
        return ProxyHeaderStatus.Complete;
    }

    // IPAddress.TryParse also takes shorthand such as "1" for 0.0.0.1; v1 wants the dotted quad or an IPv6 address.
    private static bool IsAddress(string text, AddressFamily family) =>
        IPAddress.TryParse(text, out IPAddress? address) && address.AddressFamily == family
        && (family == AddressFamily.InterNetworkV6 || text.Count(c => c == '.') == 3) && !text.Contains('%');

    private static int? ParsePort(string text) =>
        text.Length is > 0 and <= 5 && (text.Length == 1 || text[0] != '0')
        && int.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out int port) && port <= IPEndPoint.MaxPort
            ? port
            : null;
}
