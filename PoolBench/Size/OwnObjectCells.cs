using System.Diagnostics;
using PoolBench.Pools.UnderTest;
using static PoolBench.Size.SizedPoolWork;

namespace PoolBench.Size;

/// <summary>
/// The <c>size</c> cells of a thread taking and returning its own object while every other object is held: one
/// thread with a low id, one with an id above 4,096.
/// </summary>
/// <param name="rounds">Rounds per cell, the median kept.</param>
/// <param name="quick">Whether the run is a smoke test, with fewer pairs.</param>
internal sealed class OwnObjectCells(int rounds, bool quick)
{
    /// <summary>
    /// Two pools, each with every object but one held; the low-id thread takes and returns that one in
    /// one pool, the high-id thread in the other, round by round in turn, the median of each kept: a
    /// process's speed moves for seconds at a time, and rounds in turn see the same moves.
    /// </summary>
    public (double Low, double High) MeasureOwnObjects(string impl, int size, ThreadIds threads)
    {
        using ISizedPool lowPool = SizedPools.Create(impl, size);
        using ISizedPool highPool = SizedPools.Create(impl, size);
        foreach (ISizedPool pool in new[] { lowPool, highPool })
        {
            BenchItem[] held = OnThread(() => TakeAll(pool, size));
            OnThread(() => pool.Return(held[0]));
        }

        int pairs = (quick ? 100_000 : 5_000_000) / rounds;
        var low = new List<double>();
        var high = new List<double>();
        GC.Collect();
        for (int round = 0; round < rounds; round++)
        {
            low.Add(threads.RunLow(() => TimePairs(lowPool, pairs)));
            high.Add(threads.RunHigh(() => TimePairs(highPool, pairs)));
        }

        return (Median(low)!.Value, Median(high)!.Value);
    }

    /// <summary>Takes and returns an object <paramref name="pairs"/> times, writing into it as a user would: ns per pair.</summary>
    private static double TimePairs(ISizedPool pool, int pairs)
    {
        long start = Stopwatch.GetTimestamp();
        for (int i = 0; i < pairs; i++)
        {
            BenchItem item = pool.TakeOrCreate();
            item.Buffer[0] = (byte)i;
            pool.Return(item);
        }

        return Stopwatch.GetElapsedTime(start).TotalNanoseconds / pairs;
    }
}
