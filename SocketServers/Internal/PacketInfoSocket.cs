using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace SocketServers.Internal;

/// <summary>
/// Receives datagrams with the local address each was sent to, and sends replies from a given local address
/// (IP_PKTINFO and IPV6_PKTINFO through recvmsg and sendmsg, Linux): for a socket bound to a wildcard address, whose
/// replies the kernel would otherwise send from the address its routes pick, which a client connected to the address it
/// sent to never reads. .NET cannot send from a chosen address, and its receive that reports one allocates it.
/// </summary>
/// <remarks>Nothing is allocated: the sender's address goes into a <see cref="SocketAddress"/> the caller keeps, and the
/// local address into a <see cref="LocalAddress"/>. The calls hold the socket's handle, as .NET's own calls do, so
/// closing the socket meanwhile unblocks them instead of closing a descriptor in use.</remarks>
internal static unsafe partial class PacketInfoSocket
{
    // <netinet/in.h>, <bits/socket.h>, <errno.h> on Linux.
    private const int IpProtocolIP = 0;
    private const int IpPacketInfo = 8;
    private const int IpProtocolIPv6 = 41;
    private const int IPv6ReceivePacketInfo = 49;
    private const int IPv6PacketInfo = 50;
    private const int DontWait = 0x40;
    private const int ErrorInterrupted = 4;
    private const int ErrorWouldBlock = 11;
    private const int IPv4Bytes = 4;
    private const int IPv6Bytes = 16;

    // Room for both packet-info messages a dual-mode socket may receive for an IPv4 datagram.
    private const int ControlBytes = 128;

    /// <summary>Gets whether this platform can send a reply from a chosen address (Linux, whose structures are laid out
    /// here as little-endian machines have them).</summary>
    public static bool IsSupported => OperatingSystem.IsLinux() && BitConverter.IsLittleEndian;

    /// <summary>Asks the kernel to report, with each datagram <paramref name="socket"/> receives, the address it was sent to.</summary>
    public static void ReportDestinations(Socket socket)
    {
        byte[] on = BitConverter.GetBytes(1);
        if (socket.AddressFamily == AddressFamily.InterNetworkV6)
        {
            socket.SetRawSocketOption(IpProtocolIPv6, IPv6ReceivePacketInfo, on);
        }

        if (socket.AddressFamily == AddressFamily.InterNetwork || socket.DualMode)
        {
            // For IPv4 datagrams, on a dual-mode socket too: it says which address to answer a broadcast from.
            socket.SetRawSocketOption(IpProtocolIP, IpPacketInfo, on);
        }
    }

    /// <summary>Waits for one datagram on <paramref name="socket"/> (after <see cref="ReportDestinations"/>).</summary>
    /// <param name="socket">The socket.</param>
    /// <param name="buffer">Where the datagram goes; a longer one is cut to its length.</param>
    /// <param name="sender">Takes the sender's address.</param>
    /// <param name="destination">Takes the address the datagram was sent to; <see cref="LocalAddress.IsKnown"/> is false if the kernel did not say.</param>
    /// <param name="length">The datagram's length, as far as it fit.</param>
    /// <param name="wait">Whether to wait for a datagram; if not, <see cref="SocketError.WouldBlock"/> says none is there.</param>
    /// <returns>How the receive went.</returns>
    public static SocketError Receive(Socket socket, Span<byte> buffer, SocketAddress sender, out LocalAddress destination, out int length, bool wait = true)
    {
        byte* control = stackalloc byte[ControlBytes];
        destination = default;
        fixed (byte* data = buffer)
        fixed (byte* name = sender.Buffer.Span)
        {
            var vector = new IOVector { Base = data, Length = (nuint)buffer.Length };
            var message = new MessageHeader
            {
                Name = name,
                NameLength = (uint)sender.Buffer.Length,
                Vectors = &vector,
                VectorCount = 1,
                Control = control,
                ControlLength = ControlBytes,
            };
            nint received;
            while ((received = recvmsg(socket.SafeHandle, &message, wait ? 0 : DontWait)) < 0)
            {
                int errno = Marshal.GetLastPInvokeError();
                if (errno == ErrorWouldBlock && !wait)
                {
                    length = 0;
                    return SocketError.WouldBlock;
                }

                if (errno == ErrorWouldBlock)
                {
                    // A socket the runtime made non-blocking: wait as a blocking receive would.
                    socket.Poll(-1, SelectMode.SelectRead);
                }
                else if (errno != ErrorInterrupted)
                {
                    length = 0;
                    return ToSocketError(errno);
                }

                message.NameLength = (uint)sender.Buffer.Length;
                message.ControlLength = ControlBytes;
            }

            length = (int)received;
            sender.Size = (int)message.NameLength;
            destination = ReadDestination(&message, socket.AddressFamily);
            return SocketError.Success;
        }
    }

    /// <summary>Sends <paramref name="datagram"/> to <paramref name="receiver"/> from <paramref name="source"/> (or from
    /// the address the kernel picks, if that is not known).</summary>
    /// <returns>How the send went.</returns>
    public static SocketError Send(Socket socket, ReadOnlySpan<byte> datagram, SocketAddress receiver, in LocalAddress source)
    {
        byte* control = stackalloc byte[ControlBytes];
        nuint controlLength = source.IsKnown ? WriteSource(control, source, socket.AddressFamily) : 0;
        fixed (byte* data = datagram)
        fixed (byte* name = receiver.Buffer.Span)
        {
            var vector = new IOVector { Base = data, Length = (nuint)datagram.Length };
            var message = new MessageHeader
            {
                Name = name,
                NameLength = (uint)receiver.Size,
                Vectors = &vector,
                VectorCount = 1,
                Control = controlLength == 0 ? null : control,
                ControlLength = controlLength,
            };
            while (sendmsg(socket.SafeHandle, &message, 0) < 0)
            {
                int errno = Marshal.GetLastPInvokeError();
                if (errno == ErrorWouldBlock)
                {
                    // A non-blocking socket whose send buffer is full: wait as a blocking send would.
                    socket.Poll(-1, SelectMode.SelectWrite);
                }
                else if (errno != ErrorInterrupted)
                {
                    return ToSocketError(errno);
                }
            }

            return SocketError.Success;
        }
    }

    /// <summary>The local address the kernel reported, as <see cref="LocalAddress"/>; for an IPv6 socket always IPv6 (an
    /// IPv4 address mapped), the form its sends take.</summary>
    private static LocalAddress ReadDestination(MessageHeader* message, AddressFamily family)
    {
        LocalAddress fromIPv6 = default;
        byte* end = (byte*)message->Control + message->ControlLength;
        for (var header = (ControlHeader*)message->Control; (byte*)header + sizeof(ControlHeader) <= end; header = (ControlHeader*)((byte*)header + Align(header->Length)))
        {
            byte* data = (byte*)header + Align((nuint)sizeof(ControlHeader));
            if (header->Length < (nuint)sizeof(ControlHeader) || (byte*)header + header->Length > end)
            {
                break;
            }

            if (header->Level == IpProtocolIP && header->Type == IpPacketInfo)
            {
                // struct in_pktinfo: the interface, the local address to answer from (ipi_spec_dst: for a broadcast, the
                // interface's own), then the header's destination.
                var address = new ReadOnlySpan<byte>(data + sizeof(int), IPv4Bytes);
                if (family == AddressFamily.InterNetwork)
                {
                    return LocalAddress.From(address, 0);
                }

                Span<byte> mapped = stackalloc byte[IPv6Bytes];
                mapped[10] = mapped[11] = 0xFF;
                address.CopyTo(mapped[12..]);
                return LocalAddress.From(mapped, 0);
            }

            if (header->Level == IpProtocolIPv6 && header->Type == IPv6PacketInfo)
            {
                // struct in6_pktinfo: the destination, then the interface.
                fromIPv6 = LocalAddress.From(new ReadOnlySpan<byte>(data, IPv6Bytes), *(int*)(data + IPv6Bytes));
            }
        }

        return fromIPv6;
    }

    /// <returns>The length of the control message written at <paramref name="control"/>: the source to send from.</returns>
    private static nuint WriteSource(byte* control, in LocalAddress source, AddressFamily family)
    {
        var header = (ControlHeader*)control;
        byte* data = control + Align((nuint)sizeof(ControlHeader));
        if (family == AddressFamily.InterNetworkV6)
        {
            header->Level = IpProtocolIPv6;
            header->Type = IPv6PacketInfo;
            header->Length = Align((nuint)sizeof(ControlHeader)) + IPv6Bytes + sizeof(int);
            source.CopyTo(new Span<byte>(data, IPv6Bytes));
            *(int*)(data + IPv6Bytes) = source.InterfaceIndex;
        }
        else
        {
            header->Level = IpProtocolIP;
            header->Type = IpPacketInfo;
            header->Length = Align((nuint)sizeof(ControlHeader)) + sizeof(int) + (2 * IPv4Bytes);
            *(int*)data = 0;
            source.CopyTo(new Span<byte>(data + sizeof(int), IPv4Bytes));
            *(int*)(data + sizeof(int) + IPv4Bytes) = 0;
        }

        return Align(header->Length);
    }

    /// <summary>CMSG_ALIGN: control messages start at multiples of a size_t.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static nuint Align(nuint length) => (length + (nuint)sizeof(nuint) - 1) & ~((nuint)sizeof(nuint) - 1);

    /// <summary>The errors a datagram socket reports, as <see cref="SocketError"/>.</summary>
    private static SocketError ToSocketError(int errno) => errno switch
    {
        1 or 13 => SocketError.AccessDenied,
        9 => SocketError.OperationAborted,
        22 => SocketError.InvalidArgument,
        90 => SocketError.MessageSize,
        99 => SocketError.AddressNotAvailable,
        101 => SocketError.NetworkUnreachable,
        102 => SocketError.NetworkReset,
        104 => SocketError.ConnectionReset,
        105 or 12 => SocketError.NoBufferSpaceAvailable,
        107 => SocketError.NotConnected,
        111 => SocketError.ConnectionRefused,
        112 => SocketError.HostDown,
        113 => SocketError.HostUnreachable,
        _ => SocketError.SocketError,
    };

    [LibraryImport("libc", SetLastError = true)]
    private static partial nint recvmsg(SafeSocketHandle socket, MessageHeader* message, int flags);

    [LibraryImport("libc", SetLastError = true)]
    private static partial nint sendmsg(SafeSocketHandle socket, MessageHeader* message, int flags);

    /// <summary>A local address to send from: 4 or 16 bytes (as the socket's family has it) and, for an IPv6 link-local
    /// address, the interface it belongs to.</summary>
    public struct LocalAddress
    {
        private Bytes16 _bytes;
        private int _length;

        /// <summary>Gets whether the kernel reported an address; if not, the kernel picks the source.</summary>
        public readonly bool IsKnown => _length != 0;

        /// <summary>Gets the interface of a link-local address, else 0.</summary>
        public int InterfaceIndex { readonly get; private set; }

        /// <summary>The address, or an unknown one for a multicast address, which no reply may come from.</summary>
        /// <param name="address">4 or 16 bytes, network order.</param>
        /// <param name="interfaceIndex">The interface the datagram came in on; kept for an IPv6 link-local address only.</param>
        public static LocalAddress From(ReadOnlySpan<byte> address, int interfaceIndex)
        {
            var local = default(LocalAddress);
            bool ipv6 = address.Length == IPv6Bytes;
            bool multicast = ipv6 ? address[0] == 0xFF : address[0] is >= 224 and <= 239;
            if (!multicast)
            {
                address.CopyTo(local._bytes);
                local._length = address.Length;
                local.InterfaceIndex = ipv6 && address[0] == 0xFE && (address[1] & 0xC0) == 0x80 ? interfaceIndex : 0;
            }

            return local;
        }

        /// <summary>The address, for a socket whose family has <paramref name="destination"/>'s length of address.</summary>
        public readonly void CopyTo(Span<byte> destination) => ((ReadOnlySpan<byte>)_bytes)[..destination.Length].CopyTo(destination);

        [InlineArray(IPv6Bytes)]
        private struct Bytes16
        {
            private byte _first;
        }
    }

    /// <summary>struct iovec.</summary>
    [StructLayout(LayoutKind.Sequential)]
    private struct IOVector
    {
        public byte* Base;
        public nuint Length;
    }

    /// <summary>struct msghdr (glibc and musl alike on little-endian).</summary>
    [StructLayout(LayoutKind.Sequential)]
    private struct MessageHeader
    {
        public void* Name;
        public uint NameLength;
        public IOVector* Vectors;
        public nuint VectorCount;
        public void* Control;
        public nuint ControlLength;
        public int Flags;
    }

    /// <summary>struct cmsghdr; its data follows at the next multiple of a size_t.</summary>
    [StructLayout(LayoutKind.Sequential)]
    private struct ControlHeader
    {
        public nuint Length;
        public int Level;
        public int Type;
    }
}
