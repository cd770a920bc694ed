using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>What a <see cref="UdpReplyDeferral"/> needs from the server whose handler deferred a reply, and nothing more.</summary>
internal interface IUdpReplyOwner
{
    /// <summary>Counts a reply just deferred, which a stopping server waits for.</summary>
    void OnReplyDeferred();

    /// <summary>Sends a reply of <paramref name="length"/> bytes from <paramref name="args"/>' buffer to its sender.</summary>
    /// <returns>What the send threw, or <see langword="null"/> when it succeeded.</returns>
    Exception? SendReply(Socket socket, PooledSocketArgs args, int length);

    /// <summary>Counts and logs a deferred reply that has ended, sent (<paramref name="length"/> from 0), declined
    /// (<see cref="UdpDatagramHandler.NoReply"/>) or failed; never throws.</summary>
    void CountDeferredReply(PooledSocketArgs args, int length, Exception? failure);

    /// <summary>Returns the args to the pool, once neither the receive loop nor the reply holds it.</summary>
    void Release(PooledSocketArgs args);

    /// <summary>Called last for each deferred reply, once its args is back in the pool or with the receive loop (which
    /// a stopping server waits for anyway): a stopping server waits for this.</summary>
    void OnDeferredReplyEnded();
}
