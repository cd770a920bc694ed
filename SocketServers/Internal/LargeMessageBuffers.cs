using System.Diagnostics.CodeAnalysis;

namespace SocketServers.Internal;

/// <summary>
/// The buffers a connection's receive grows into while a message outgrows <see cref="TcpServerOptions.BufferSize"/>:
/// sizes double from twice the buffer size up to <see cref="TcpServerOptions.MaxMessageSize"/>, and every one this has
/// made, lent or kept for reuse, counts against one byte budget shared by the server's connections. A take never waits:
/// with the budget spent it fails, and the connection ends its message as too large.
/// </summary>
/// <remarks>Thread-safe. A lock guards it: it is taken only when a message outgrows a buffer, never for one that fits.</remarks>
internal sealed class LargeMessageBuffers
{
    private readonly Lock _lock = new();

    // The size of each class, doubling from 2 × BufferSize, the last one MaxMessageSize; empty when they are equal.
    private readonly int[] _sizes;

    // Buffers made and not lent, by class; kept for the next large message until the budget needs their room.
    private readonly Stack<byte[]>[] _free;

    // Under _lock. The bytes of every buffer made and not dropped, lent or free: at most Budget.
    private long _allocated;

    // Under _lock. The bytes of the buffers lent now.
    private long _lent;

    /// <summary>Creates the buffers of one server.</summary>
    /// <param name="bufferSize">A connection's normal receive buffer size.</param>
    /// <param name="maxMessageSize">The largest buffer, at least <paramref name="bufferSize"/>.</param>
    /// <param name="budget">The most bytes all the buffers together may take.</param>
    public LargeMessageBuffers(int bufferSize, int maxMessageSize, long budget)
    {
        BufferSize = bufferSize;
        MaxMessageSize = maxMessageSize;
        Budget = budget;
        var sizes = new List<int>();
        for (long size = 2L * bufferSize; bufferSize < maxMessageSize && (sizes.Count == 0 || sizes[^1] < maxMessageSize); size *= 2)
        {
            sizes.Add((int)Math.Min(size, maxMessageSize));
        }

        _sizes = [.. sizes];
        _free = [.. _sizes.Select(_ => new Stack<byte[]>())];
    }

    /// <summary>Gets a connection's normal receive buffer size.</summary>
    public int BufferSize { get; }

    /// <summary>Gets the largest message a connection may receive, and so the largest buffer.</summary>
    public int MaxMessageSize { get; }

    /// <summary>Gets the most bytes the buffers together may take.</summary>
    public long Budget { get; }

    /// <summary>Gets the bytes of the buffers lent now.</summary>
    public long LentBytes
    {
        get
        {
            lock (_lock)
            {
                return _lent;
            }
        }
    }

    /// <summary>Gets the bytes of every buffer made and not dropped, lent or kept.</summary>
    public long AllocatedBytes
    {
        get
        {
            lock (_lock)
            {
                return _allocated;
            }
        }
    }

    /// <summary>The two sizes the server derives the budget from: room for one message of the largest size while it
    /// grows (its last two buffers), or as much again as the normal receive buffers, whichever is more.</summary>
    public static long BudgetFor(int bufferSize, int maxMessageSize, int maxConnections)
        => Math.Max(2L * maxMessageSize, (long)maxConnections * bufferSize);

    /// <summary>Gets the size a full buffer of <paramref name="length"/> bytes grows to, or 0 if it is as large as a
    /// message may be.</summary>
    public int NextSize(int length)
    {
        foreach (int size in _sizes)
        {
            if (size > length)
            {
                return size;
            }
        }

        return 0;
    }

    /// <summary>Lends a buffer of <paramref name="size"/> bytes, one <see cref="NextSize"/> gave, unless the budget
    /// is spent; free buffers of other sizes are dropped to make room.</summary>
    public bool TryTake(int size, [NotNullWhen(true)] out byte[]? buffer)
    {
        int sizeClass = Array.IndexOf(_sizes, size);
        lock (_lock)
        {
            if (_free[sizeClass].TryPop(out buffer))
            {
                _lent += size;
                return true;
            }

            for (int other = 0; other < _free.Length && _allocated + size > Budget; other++)
            {
                while (_allocated + size > Budget && _free[other].TryPop(out byte[]? dropped))
                {
                    _allocated -= dropped.Length;
                }
            }

            if (_allocated + size > Budget)
            {
                return false;
            }

            _allocated += size;
            _lent += size;
        }

        // Made outside the lock: zeroing a large array takes a while, and its bytes are already counted.
        buffer = GC.AllocateUninitializedArray<byte>(size, pinned: true);
        return true;
    }

    /// <summary>Takes back a buffer <see cref="TryTake"/> lent.</summary>
    public void Return(byte[] buffer)
    {
        int sizeClass = Array.IndexOf(_sizes, buffer.Length);
        lock (_lock)
        {
            _free[sizeClass].Push(buffer);
            _lent -= buffer.Length;
        }
    }
}
