using System.Net;
using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>Creates the servers' bound sockets: binding, port sharing, and the error a start reports when binding fails.</summary>
internal static class SocketBinding
{
    /// <summary>Creates a socket bound to <paramref name="endPoint"/>, listening when <paramref name="listenBacklog"/> is
    /// positive; a failure leaves nothing open, and a bind failure becomes the <see cref="IOException"/> that
    /// <see cref="SocketServer.StartAsync"/> documents.</summary>
    /// <param name="endPoint">The address and port to bind.</param>
    /// <param name="protocol"><see cref="ProtocolType.Tcp"/> for a stream socket, else a datagram socket.</param>
    /// <param name="protocolName">"TCP" or "UDP", for messages.</param>
    /// <param name="listenBacklog">The listen backlog; 0 for a socket that does not listen.</param>
    /// <param name="sharePort">Whether to share the port with other sockets that ask for it (SO_REUSEPORT, Linux only).</param>
    /// <returns>The bound socket.</returns>
    public static Socket Bind(IPEndPoint endPoint, ProtocolType protocol, string protocolName, int listenBacklog, bool sharePort)
    {
        var socket = new Socket(endPoint.AddressFamily, protocol == ProtocolType.Tcp ? SocketType.Stream : SocketType.Dgram, protocol);
        try
        {
            if (sharePort)
            {
                AllowPortSharing(socket, protocolName);
            }

            // "::" serves IPv4 clients too (as IPv4-mapped addresses), on the same socket.
            if (endPoint.Address.Equals(IPAddress.IPv6Any))
            {
                socket.DualMode = true;
            }

            // No ReuseAddress: on Linux it maps to SO_REUSEPORT and would let a second server share the port.
            socket.Bind(endPoint);
            if (listenBacklog > 0)
            {
                socket.Listen(listenBacklog);
            }

            return socket;
        }
        catch (SocketException ex)
        {
            socket.Dispose();
            string reason = ex.SocketErrorCode == SocketError.AddressAlreadyInUse ? "the address is already in use" : ex.Message;
            throw new IOException($"Cannot listen on {protocolName} {endPoint}: {reason}.", ex);
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }

    /// <summary>Lets processes that all ask for it bind the same port, the kernel spreading the load (SO_REUSEPORT).</summary>
    private static void AllowPortSharing(Socket socket, string protocolName)
    {
        if (!OperatingSystem.IsLinux())
        {
            throw new PlatformNotSupportedException($"Sharing a port between processes (reuse-port) is supported on Linux only; the {protocolName} server cannot use it here.");
        }

        // Set alone, not through ReuseAddress, which on Linux also sets SO_REUSEADDR.
        const int SolSocket = 1;
        const int SoReusePort = 15;
        socket.SetRawSocketOption(SolSocket, SoReusePort, BitConverter.GetBytes(1));
    }
}
