using PoolBench.Pools.UnderTest;

namespace PoolBench.Size;

/// <summary>One pool kind as the <c>size</c> cells drive it, from one thread or several at once.</summary>
internal interface ISizedPool : IDisposable
{
    /// <summary>The name in the tables and the JSON <c>impl</c> key.</summary>
    string Impl { get; }

    /// <summary>Whether the pool caps its objects, so that a take waits when it is exhausted.</summary>
    bool IsCapped { get; }

    /// <summary>Whether <see cref="TryTakeIdle"/> can fail: <c>DefaultObjectPool</c> always hands out an object.</summary>
    bool CanFail { get; }

    /// <summary>Whether <see cref="Trim"/> does anything.</summary>
    bool CanTrim { get; }

    /// <summary>An idle object, or a new one within a cap; null where the pool has neither to give.</summary>
    BenchItem? TryTakeIdle();

    /// <summary>An idle object, else a new one.</summary>
    BenchItem TakeOrCreate();

    void Return(BenchItem item);

    /// <summary>Ends a rental without keeping the object; the pools that do not track their objects drop it.</summary>
    void Discard(BenchItem item);

    /// <summary>Drops idle objects down to four.</summary>
    void Trim();

    /// <summary>A take that waits at most <paramref name="timeout"/>; capped pools only.</summary>
    bool TryTake(TimeSpan timeout);
}
