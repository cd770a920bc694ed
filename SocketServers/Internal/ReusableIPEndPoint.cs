using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace SocketServers.Internal;

/// <summary>An <see cref="IPEndPoint"/> that a receive-from on a <see cref="SocketAsyncEventArgs"/> updates in place
/// instead of replacing, so that learning a datagram's sender allocates nothing.</summary>
/// <remarks>
/// When the sender differs from an args' <see cref="SocketAsyncEventArgs.RemoteEndPoint"/>, the runtime replaces it with
/// <c>RemoteEndPoint.Create(senderAddress)</c>; this endpoint's <see cref="Create"/> takes the sender's port, and its
/// address when it differs, and returns itself. It keeps the raw <see cref="SocketAddress"/> too, for the reply's
/// <see cref="Socket.SendTo(ReadOnlySpan{byte}, SocketFlags, SocketAddress)"/>. Mutable: it belongs to one args, is
/// changed only by that args' receive, and is read only by the args' owner between the receive and the reply; whatever
/// keeps the sender longer (a log event formatted later) takes a <see cref="Snapshot"/>.
/// </remarks>
internal sealed class ReusableIPEndPoint : IPEndPoint
{
    // sockaddr_in and sockaddr_in6 place the port (network order) and the address at the same offsets on
    // every platform .NET runs on; only the family field before them differs (BSD's sin_len).
    private const int PortOffset = 2;
    private const int IPv4AddressOffset = 4;
    private const int IPv6AddressOffset = 8;
    private const int IPv6ScopeIdOffset = 24;
    private const int IPv4AddressBytes = 4;
    private const int IPv6AddressBytes = 16;

    /// <summary>Creates an endpoint of <paramref name="family"/> with the wildcard address and port 0.</summary>
    /// <param name="family"><see cref="AddressFamily.InterNetwork"/> or <see cref="AddressFamily.InterNetworkV6"/>.</param>
    public ReusableIPEndPoint(AddressFamily family)
        : base(family == AddressFamily.InterNetworkV6 ? IPAddress.IPv6Any : IPAddress.Any, 0)
    {
        SocketAddress = Serialize();
    }

    /// <summary>The same address in the socket layer's form, kept equal to this endpoint by <see cref="Create"/>:
    /// what a send to this endpoint takes without serializing it again. The invariant holds because only
    /// <see cref="Create"/> changes <see cref="IPEndPoint.Address"/> and <see cref="IPEndPoint.Port"/> (the runtime
    /// skips it when the sender equals this endpoint already).</summary>
    public SocketAddress SocketAddress { get; }

    /// <summary>Takes the address and port of <paramref name="socketAddress"/> and returns this same object.</summary>
    /// <param name="socketAddress">The sender's address, as the socket layer received it.</param>
    /// <returns>This endpoint, now equal to <paramref name="socketAddress"/>.</returns>
    public override EndPoint Create(SocketAddress socketAddress)
    {
        ArgumentNullException.ThrowIfNull(socketAddress);
        ReadOnlySpan<byte> raw = socketAddress.Buffer.Span[..socketAddress.Size];
        int addressBytes = AddressBytes(socketAddress.Family, raw.Length);
        if (addressBytes == 0 || raw.Length > SocketAddress.Buffer.Length)
        {
            // Not an address this endpoint can take in place: the base class validates it and builds a new one.
            // If that throws, the runtime keeps this endpoint as the datagram's sender, so forget the previous
            // sender first: port 0 makes the reply a drop instead of a datagram to somebody else.
            Port = 0;
            SocketAddress.Buffer.Span.Slice(PortOffset, sizeof(ushort)).Clear();
            return base.Create(socketAddress);
        }

        // A sender on the previous one's address (every local client) costs nothing; one on another, an IPAddress.
        if (!HasAddress(raw, addressBytes))
        {
            Address = addressBytes == IPv4AddressBytes
                ? new IPAddress(raw.Slice(IPv4AddressOffset, IPv4AddressBytes))
                : new IPAddress(raw.Slice(IPv6AddressOffset, IPv6AddressBytes), MemoryMarshal.Read<uint>(raw[IPv6ScopeIdOffset..]));
        }

        Port = BinaryPrimitives.ReadUInt16BigEndian(raw[PortOffset..]);
        SocketAddress.Size = raw.Length;
        raw.CopyTo(SocketAddress.Buffer.Span);
        return this;
    }

    /// <summary>An immutable copy, for whatever keeps the sender beyond the current datagram.</summary>
    /// <returns>A new <see cref="IPEndPoint"/> equal to this one now.</returns>
    public IPEndPoint Snapshot() => new(Address, Port);

    /// <returns>The length of the address in a socket address of <paramref name="family"/> and
    /// <paramref name="size"/> bytes that this endpoint can take, or 0 when it cannot.</returns>
    private int AddressBytes(AddressFamily family, int size)
    {
        if (family != AddressFamily)
        {
            return 0;
        }

        return family switch
        {
            AddressFamily.InterNetwork when size >= IPv4AddressOffset + IPv4AddressBytes => IPv4AddressBytes,
            AddressFamily.InterNetworkV6 when size >= IPv6ScopeIdOffset + sizeof(uint) => IPv6AddressBytes,
            _ => 0,
        };
    }

    private bool HasAddress(ReadOnlySpan<byte> raw, int addressBytes)
    {
        Span<byte> current = stackalloc byte[IPv6AddressBytes];
        if (!Address.TryWriteBytes(current, out int written) || written != addressBytes)
        {
            return false;
        }

        return addressBytes == IPv4AddressBytes
            ? raw.Slice(IPv4AddressOffset, IPv4AddressBytes).SequenceEqual(current[..IPv4AddressBytes])
            : raw.Slice(IPv6AddressOffset, IPv6AddressBytes).SequenceEqual(current)
                && Address.ScopeId == MemoryMarshal.Read<uint>(raw[IPv6ScopeIdOffset..]);
    }
}
