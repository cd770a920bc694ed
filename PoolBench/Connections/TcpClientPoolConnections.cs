using PoolLib;
using SocketServers;

namespace PoolBench.Connections;

/// <summary>A <see cref="TcpClientPool"/> as the workers use it: a lease is the slot a take hands out.</summary>
internal readonly struct TcpClientPoolConnections(TcpClientPool pool) : IPooledConnections<PoolSlot<TcpClientConnection>>
{
    public ValueTask<PoolSlot<TcpClientConnection>> TakeAsync(CancellationToken cancellationToken) => pool.TakeSlotAsync(cancellationToken);

    public ValueTask SendAsync(PoolSlot<TcpClientConnection> lease, ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken)
        => lease.Object.SendAsync(buffer, cancellationToken);

    public ValueTask<int> ReceiveAsync(PoolSlot<TcpClientConnection> lease, Memory<byte> buffer, CancellationToken cancellationToken)
        => lease.Object.ReceiveAsync(buffer, cancellationToken);

    public void Release(PoolSlot<TcpClientConnection> lease) => pool.Release(lease);

    public void Discard(PoolSlot<TcpClientConnection> lease) => lease.Discard();
}
