using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;

namespace PoolBench.Connections;

/// <summary>
/// The pool of connected sockets a .NET user writes by hand: a <see cref="SemaphoreSlim"/> caps the connections, a
/// <see cref="ConcurrentBag{T}"/> keeps the idle ones, and a take that finds the bag empty connects a new socket; sends
/// and receives are <see cref="Socket"/>'s own with <see cref="Memory{T}"/> buffers.
/// </summary>
internal sealed class HandWrittenSocketPool(EndPoint endPoint, int maxConnections) : IPooledConnections<Socket>, IDisposable
{
    private readonly SemaphoreSlim _places = new(maxConnections, maxConnections);
    private readonly ConcurrentBag<Socket> _idle = [];

    public async ValueTask<Socket> TakeAsync(CancellationToken cancellationToken)
    {
        await _places.WaitAsync(cancellationToken).ConfigureAwait(false);
        if (_idle.TryTake(out Socket? socket))
        {
            return socket;
        }

        socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        try
        {
            await socket.ConnectAsync(endPoint, cancellationToken).ConfigureAwait(false);
            return socket;
        }
        catch
        {
            socket.Dispose();
            _places.Release();
            throw;
        }
    }

    public async ValueTask SendAsync(Socket lease, ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken)
    {
        while (!buffer.IsEmpty)
        {
            buffer = buffer[await lease.SendAsync(buffer, SocketFlags.None, cancellationToken).ConfigureAwait(false)..];
        }
    }

    public ValueTask<int> ReceiveAsync(Socket lease, Memory<byte> buffer, CancellationToken cancellationToken)
        => lease.ReceiveAsync(buffer, SocketFlags.None, cancellationToken);

    public void Release(Socket lease)
    {
        _idle.Add(lease);
        _places.Release();
    }

    public void Discard(Socket lease)
    {
        lease.Dispose();
        _places.Release();
    }

    /// <summary>Closes the idle sockets; the pool must not be in use.</summary>
    public void Dispose()
    {
        while (_idle.TryTake(out Socket? socket))
        {
            socket.Dispose();
        }

        _places.Dispose();
    }
}
