namespace SocketServers.Internal;

/// <summary>
/// A server's running counts, added to from every loop and connection at once; <see cref="Snapshot"/> reads them into
/// the public <see cref="SocketServerCounters"/>.
/// </summary>
/// <remarks>Every field is written with <see cref="Interlocked"/> and read with <see cref="Volatile"/> or
/// <see cref="Interlocked.Read(ref readonly long)"/>, so counts from different threads are never lost; a snapshot is not
/// one instant across the fields.</remarks>
internal sealed class LiveCounters
{
    private int _currentConnections;
    private int _peakConnections;
    private long _totalConnections;
    private long _messagesHandled;
    private long _bytesSent;
    private long _drops;
    private long _rejected;
    private long _evicted;
    private long _loopRestarts;

    /// <summary>Gets the TCP connections open now.</summary>
    public int OpenConnections => Volatile.Read(ref _currentConnections);

    /// <summary>Gets the loops started again after an unexpected exception.</summary>
    public long LoopRestarts => Interlocked.Read(ref _loopRestarts);

    /// <summary>Reads the counts, with the pool's, into a snapshot.</summary>
    /// <param name="pool">The server's args pool; <see langword="null"/> before the first start.</param>
    /// <returns>The snapshot.</returns>
    public SocketServerCounters Snapshot(SocketArgsPool? pool) => new(
        Volatile.Read(ref _currentConnections),
        Volatile.Read(ref _peakConnections),
        Interlocked.Read(ref _totalConnections),
        Interlocked.Read(ref _messagesHandled),
        Interlocked.Read(ref _bytesSent),
        Interlocked.Read(ref _drops),
        pool?.TotalCount ?? 0,
        pool?.AvailableCount ?? 0,
        Interlocked.Read(ref _rejected),
        Interlocked.Read(ref _evicted));

    /// <summary>Counts a loop that starts again after a failure.</summary>
    public void LoopRestarted() => Interlocked.Increment(ref _loopRestarts);

    /// <summary>Counts a UDP datagram handled, with the bytes of its reply (0 for an empty one or none).</summary>
    public void DatagramHandled(int bytesSent)
    {
        Interlocked.Increment(ref _messagesHandled);
        Interlocked.Add(ref _bytesSent, bytesSent);
    }

    /// <summary>Counts bytes as a send hands them to the kernel (TCP, which may send a reply in parts).</summary>
    public void BytesSent(int bytes) => Interlocked.Add(ref _bytesSent, bytes);

    /// <summary>Counts a TCP receive the handler has handled (<see cref="BytesSent"/> counts what it sends).</summary>
    public void MessageHandled() => Interlocked.Increment(ref _messagesHandled);

    /// <summary>Counts a dropped connection or datagram.</summary>
    public void Dropped() => Interlocked.Increment(ref _drops);

    /// <summary>Counts a client closed at once, over a connection limit.</summary>
    public void Rejected() => Interlocked.Increment(ref _rejected);

    /// <summary>Counts a connection evicted for a waiting client.</summary>
    public void Evicted() => Interlocked.Increment(ref _evicted);

    /// <summary>Counts a connection opened, and raises the peak if it is one.</summary>
    public void ConnectionOpened()
    {
        Interlocked.Increment(ref _totalConnections);
        int current = Interlocked.Increment(ref _currentConnections);
        int peak = Volatile.Read(ref _peakConnections);
        while (current > peak)
        {
            int seen = Interlocked.CompareExchange(ref _peakConnections, current, peak);
            if (seen == peak)
            {
                break;
            }

            peak = seen;
        }
    }

    /// <summary>Counts a connection closed.</summary>
    /// <returns>The number of connections still open.</returns>
    public int ConnectionClosed() => Interlocked.Decrement(ref _currentConnections);
}
