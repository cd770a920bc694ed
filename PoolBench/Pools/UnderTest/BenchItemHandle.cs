namespace PoolBench.Pools.UnderTest;

/// <summary>
/// A handle for one <see cref="BenchItem"/> whose state word a take and a release flip with a
/// compare-and-swap, as our pool's slot does: what any pool that hands out a handle per object and
/// refuses a double release pays, without the cap, the waiters or the padding.
/// </summary>
internal sealed class BenchItemHandle
{
    private const int Idle = 0;
    private const int Rented = 1;

    private int _state = Rented;

    public BenchItemHandle(BenchItem item)
    {
        Item = item;
        item.Handle = this;
    }

    public BenchItem Item { get; }

    public BenchItem Claim() => Interlocked.CompareExchange(ref _state, Rented, Idle) == Idle
        ? Item
        : throw new InvalidOperationException("the handle was not idle");

    public void Release()
    {
        if (Interlocked.CompareExchange(ref _state, Idle, Rented) != Rented)
        {
            throw new InvalidOperationException("the handle was not rented");
        }
    }
}
