using PoolLib;

namespace PoolBench.Pools.UnderTest;

/// <summary>
/// The object every pool in the <c>pools</c> scenario hands out: a 256-byte buffer, so that
/// <c>new</c> pays for a realistic allocation. <see cref="Slot"/> is used by our pool only, and
/// <see cref="Handle"/> by the <c>size</c> scenario's bag of handles.
/// </summary>
internal sealed class BenchItem
{
    public const int BufferSize = 256;

    public byte[] Buffer { get; } = new byte[BufferSize];

    public PoolSlot<BenchItem>? Slot { get; set; }

    public BenchItemHandle? Handle { get; set; }
}
