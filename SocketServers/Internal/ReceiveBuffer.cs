using PoolLib;

namespace SocketServers.Internal;

/// <summary>
/// A connection's receive buffer: a pooled <see cref="TcpServerOptions.BufferSize"/> one, or, while a message outgrows
/// it, a larger one from the server's <see cref="LargeMessageBuffers"/>, given back as soon as what is pending fits the
/// normal size again. <see cref="Pending"/> bytes at its start are received and not consumed.
/// </summary>
/// <remarks>The connection's loop's alone.</remarks>
internal sealed class ReceiveBuffer(ITcpConnectionOwner owner)
{
    // At most one of the two is held: the normal buffer, or the grown one.
    private PoolSlot<byte[]>? _normal;
    private byte[]? _grown;

    /// <summary>Gets or sets how many bytes at the buffer's start are received and not consumed.</summary>
    public int Pending { get; set; }

    private Pool<byte[]> Buffers => owner.Buffers;

    private LargeMessageBuffers Large => owner.LargeBuffers;

    /// <summary>Gets the buffer while one is held.</summary>
    public byte[]? Array => _grown ?? _normal?.Object;

    /// <summary>Gets the pending bytes.</summary>
    public ReadOnlyMemory<byte> PendingBytes => Array.AsMemory(0, Pending);

    /// <summary>Gets whether a full buffer can grow no more: it is as large as a message may be.</summary>
    public bool AtMaxMessageSize => Large.NextSize(Array?.Length ?? 0) == 0;

    /// <summary>Gets the buffer, taking a normal one if none is held; never waits, as a connection holds at most one
    /// normal buffer and there are as many as connections.</summary>
    public byte[] Take() => _grown ?? (_normal ??= Buffers.TakeSlot()).Object;

    /// <summary>Moves the pending bytes of a full buffer into one twice as large (at most the largest message), unless
    /// it is that large already or the budget is spent.</summary>
    /// <returns>Whether it grew.</returns>
    public bool TryGrow()
    {
        byte[] full = Array!;
        int size = Large.NextSize(full.Length);
        if (size == 0 || !Large.TryTake(size, out byte[]? grown))
        {
            return false;
        }

        full.AsSpan(0, Pending).CopyTo(grown);
        GiveBack();
        _grown = grown;
        return true;
    }

    /// <summary>Gives a grown buffer back once the pending bytes fit a normal one again, moving them to it.</summary>
    public void ShrinkIfFits()
    {
        if (_grown is not { } grown || Pending > Large.BufferSize)
        {
            return;
        }

        _grown = null;
        if (Pending > 0)
        {
            grown.AsSpan(0, Pending).CopyTo((_normal = Buffers.TakeSlot()).Object);
        }

        Large.Return(grown);
    }

    /// <summary>Gives the buffer back, whatever it holds; the pending bytes are dropped.</summary>
    public void Release()
    {
        Pending = 0;
        GiveBack();
    }

    private void GiveBack()
    {
        if (_normal is { } normal)
        {
            _normal = null;
            Buffers.Release(normal);
        }

        if (_grown is { } grown)
        {
            _grown = null;
            Large.Return(grown);
        }
    }
}
