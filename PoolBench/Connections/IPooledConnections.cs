namespace PoolBench.Connections;

/// <summary>
/// A pool of TCP connections as the scenario's workers use one: take a lease, send and receive on it, release it, or
/// discard it when it broke. The workers' loops are generic over it, so that each pool gets a loop of its own that calls
/// it directly.
/// </summary>
/// <typeparam name="TLease">What a take hands out: a slot, a socket.</typeparam>
internal interface IPooledConnections<TLease>
{
    /// <summary>A connection, idle or newly connected, waiting while the pool's cap is reached.</summary>
    ValueTask<TLease> TakeAsync(CancellationToken cancellationToken);

    /// <summary>Sends all of <paramref name="buffer"/>.</summary>
    ValueTask SendAsync(TLease lease, ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken);

    /// <summary>Receives what has come, at least a byte; 0 when the peer closed.</summary>
    ValueTask<int> ReceiveAsync(TLease lease, Memory<byte> buffer, CancellationToken cancellationToken);

    /// <summary>Gives the connection back for the next take.</summary>
    void Release(TLease lease);

    /// <summary>Closes a connection that failed and frees its place under the cap.</summary>
    void Discard(TLease lease);
}
