using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>What a <see cref="ConnectionPreamble"/> hands back to the server that accepted the connection.</summary>
internal interface IConnectionPreambleOwner
{
    /// <summary>Starts the connection whose preamble is done; called once per connection, or <see cref="OnPreambleFailed"/>.</summary>
    /// <param name="slot">The pooled args' slot the connection has held since its accept.</param>
    /// <param name="args">The pooled args.</param>
    /// <param name="socket">The accepted socket.</param>
    /// <param name="client">The client's address from a PROXY header; <see langword="null"/> for the socket's.</param>
    /// <param name="tls">The authenticated TLS stream; <see langword="null"/> without TLS.</param>
    void OnPreambleDone(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, EndPoint? client, SslStream? tls);

    /// <summary>Takes back the slot of a connection closed before it started; its socket is closed already.</summary>
    /// <param name="slot">The pooled args' slot.</param>
    void OnPreambleFailed(PoolSlot<SocketAsyncEventArgs> slot);
}
