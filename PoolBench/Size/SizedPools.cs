using System.Collections.Concurrent;
using Microsoft.Extensions.ObjectPool;
using PoolBench.Pools.UnderTest;
using PoolLib;

namespace PoolBench.Size;

/// <summary>The pools the <c>size</c> cells compare, each made to hold up to a given number of objects.</summary>
internal static class SizedPools
{
    public const string Ours = OurPoolUnderTest.Name;

    public const string BagOfHandles = "ConcurrentBag + handle";

    public static IReadOnlyList<string> Impls { get; } = [Ours, DefaultObjectPoolUnderTest.Name, ConcurrentBagPoolUnderTest.Name, BagOfHandles];

    public static ISizedPool Create(string impl, int objects) => impl switch
    {
        Ours => new OurSizedPool(objects),
        DefaultObjectPoolUnderTest.Name => new DefaultObjectSizedPool(objects),
        BagOfHandles => new HandleBagSizedPool(),
        _ => new BagSizedPool(),
    };

    /// <summary>Ours, capped at the size, keeping four idle objects when trimmed.</summary>
    private sealed class OurSizedPool(int objects) : ISizedPool
    {
        private readonly BenchItemPool _pool = new(new PoolOptions { MaxCapacity = objects, MinIdle = Math.Min(4, objects) }, prefill: false);

        public string Impl => Ours;

        public bool IsCapped => true;

        public bool CanFail => true;

        public bool CanTrim => true;

        public BenchItem? TryTakeIdle() => _pool.TryTakeSlot(out PoolSlot<BenchItem>? slot) ? slot.Object : null;

        public BenchItem TakeOrCreate() => _pool.TakeSlot().Object;

        public void Return(BenchItem item) => _pool.Release(item.Slot!);

        public void Discard(BenchItem item) => item.Slot!.Discard();

        public void Trim() => _pool.Trim();

        public bool TryTake(TimeSpan timeout) => _pool.TryTakeSlot(timeout, out _);

        public void Dispose() => _pool.Dispose();
    }

    /// <summary><c>DefaultObjectPool</c> retaining up to the size: a take creates when it is empty.</summary>
    private sealed class DefaultObjectSizedPool(int objects) : ISizedPool
    {
        private readonly DefaultObjectPool<BenchItem> _pool = new(new DefaultPooledObjectPolicy<BenchItem>(), objects);

        public string Impl => DefaultObjectPoolUnderTest.Name;

        public bool IsCapped => false;

        public bool CanFail => false;

        public bool CanTrim => false;

        public BenchItem? TryTakeIdle() => _pool.Get();

        public BenchItem TakeOrCreate() => _pool.Get();

        public void Return(BenchItem item) => _pool.Return(item);

        public void Discard(BenchItem item)
        {
        }

        public void Trim()
        {
        }

        public bool TryTake(TimeSpan timeout) => throw new NotSupportedException("DefaultObjectPool never waits");

        public void Dispose()
        {
        }
    }

    /// <summary>The .NET documentation's pool over a <see cref="ConcurrentBag{T}"/>: a take creates when the bag is empty.</summary>
    private sealed class BagSizedPool : ISizedPool
    {
        private readonly ConcurrentBag<BenchItem> _items = [];

        public string Impl => ConcurrentBagPoolUnderTest.Name;

        public bool IsCapped => false;

        public bool CanFail => true;

        public bool CanTrim => true;

        public BenchItem? TryTakeIdle() => _items.TryTake(out BenchItem? item) ? item : null;

        public BenchItem TakeOrCreate() => _items.TryTake(out BenchItem? item) ? item : new BenchItem();

        public void Return(BenchItem item) => _items.Add(item);

        public void Discard(BenchItem item)
        {
        }

        public void Trim()
        {
            while (_items.Count > 4 && _items.TryTake(out _))
            {
            }
        }

        public bool TryTake(TimeSpan timeout) => throw new NotSupportedException("the bag pool never waits");

        public void Dispose()
        {
        }
    }

    /// <summary>The bag pool over <see cref="BenchItemHandle"/>s: the least a pool with a handle per object does.</summary>
    private sealed class HandleBagSizedPool : ISizedPool
    {
        private readonly ConcurrentBag<BenchItemHandle> _handles = [];

        public string Impl => BagOfHandles;

        public bool IsCapped => false;

        public bool CanFail => true;

        public bool CanTrim => true;

        public BenchItem? TryTakeIdle() => _handles.TryTake(out BenchItemHandle? handle) ? handle.Claim() : null;

        public BenchItem TakeOrCreate() => TryTakeIdle() ?? new BenchItemHandle(new BenchItem()).Item;

        public void Return(BenchItem item)
        {
            item.Handle!.Release();
            _handles.Add(item.Handle);
        }

        public void Discard(BenchItem item)
        {
        }

        public void Trim()
        {
            while (_handles.Count > 4 && _handles.TryTake(out _))
            {
            }
        }

        public bool TryTake(TimeSpan timeout) => throw new NotSupportedException("the bag pool never waits");

        public void Dispose()
        {
        }
    }
}
