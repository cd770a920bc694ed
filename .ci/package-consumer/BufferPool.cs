using PoolLib;

/// <summary>The subclass in PoolLib's README: makes buffers of one size, clears them on release.</summary>
internal sealed class BufferPool : Pool<byte[]>
{
    private readonly int _size;

    public BufferPool(int size, int maxCapacity) : base(maxCapacity)
    {
        _size = size;
        TryAllocatePush(maxCapacity / 2);
    }

    protected override byte[] ObjectConstructor() => new byte[_size];

    protected override void CleanUp(byte[] buffer) => Array.Clear(buffer);
}
