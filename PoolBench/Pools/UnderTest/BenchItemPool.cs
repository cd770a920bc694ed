using PoolLib;

namespace PoolBench.Pools.UnderTest;

/// <summary>Our pool for <see cref="BenchItem"/>, filled to capacity up front like the peers are, unless told not to.</summary>
internal sealed class BenchItemPool : Pool<BenchItem>
{
    public BenchItemPool(int capacity)
        : this(new PoolOptions { MaxCapacity = capacity })
    {
    }

    public BenchItemPool(PoolOptions options, bool prefill = true)
        : base(options)
    {
        if (prefill && !TryAllocatePush(options.MaxCapacity))
        {
            throw new InvalidOperationException($"could not pre-fill the pool with {options.MaxCapacity} objects");
        }
    }

    protected override BenchItem ObjectConstructor() => new();

    protected override void HoldSlotInObject(BenchItem item, PoolSlot<BenchItem> slot) => item.Slot = slot;
}
