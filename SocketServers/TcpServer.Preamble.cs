using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

public partial class TcpServer
{
    // The PROXY header and the TLS handshake before a connection starts; null when the options ask for neither.
    private readonly ConnectionPreamble? _preamble;

    /// <summary>Gets what runs before a connection starts; <see langword="null"/> without PROXY and TLS. For tests.</summary>
    internal ConnectionPreamble? Preamble => _preamble;

    void IConnectionPreambleOwner.OnPreambleDone(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, EndPoint? client, SslStream? tls)
        => OpenConnection(slot, args, socket, client, tls);

    void IConnectionPreambleOwner.OnPreambleFailed(PoolSlot<SocketAsyncEventArgs> slot) => Pool.Release(slot);
}
