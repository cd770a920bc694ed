using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>
/// What a UDP receive loop (or thread) does after a receive that ended with an error: go on after a datagram too large
/// (which the loop drops) or an ICMP report about an earlier reply (the socket is fine), stop once the socket is closed
/// or the server stops, and otherwise end as an unexpected exception does, so that the loop is started again after a
/// pause instead of retrying at once a socket that would likely fail at once again, for ever.
/// </summary>
internal static class UdpReceiveErrors
{
    /// <summary>Says whether <paramref name="error"/> reports a datagram that did not fit the buffer.</summary>
    public static bool IsTooLarge(SocketError error) => error is SocketError.Success or SocketError.MessageSize;

    /// <summary>Says whether <paramref name="error"/> is an ICMP error about an earlier reply, which one can get per
    /// datagram sent.</summary>
    public static bool ReportsEarlierReply(SocketError error) => error
        is SocketError.ConnectionReset
        or SocketError.ConnectionRefused
        or SocketError.HostUnreachable
        or SocketError.NetworkUnreachable
        or SocketError.NetworkReset
        or SocketError.HostDown;

    /// <summary>Decides whether the receive loop goes on after a receive that ended with <paramref name="error"/>.</summary>
    /// <param name="error">The receive's outcome; <see cref="SocketError.Success"/> for a datagram too large.</param>
    /// <param name="stopping">Whether the server is stopping.</param>
    /// <returns>Whether to receive again: after a datagram too large or a report about an earlier reply; not once
    /// the socket is closed or the server stops.</returns>
    /// <exception cref="SocketException">Any other error, while the server runs: the socket itself failing.</exception>
    public static bool GoesOn(SocketError error, bool stopping)
    {
        if (IsTooLarge(error) || ReportsEarlierReply(error))
        {
            return true;
        }

        if (error == SocketError.OperationAborted || stopping)
        {
            return false;
        }

        throw new SocketException((int)error);
    }
}
