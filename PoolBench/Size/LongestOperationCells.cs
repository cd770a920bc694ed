using System.Diagnostics;
using PoolBench.Pools.UnderTest;
using static PoolBench.Size.SizedPoolWork;

namespace PoolBench.Size;

/// <summary>
/// The <c>size</c> cells of the longest single operation: a failed take after a thread took every object back
/// through its hints, and a discard while the pool shrinks from its size to nothing.
/// </summary>
/// <param name="rounds">Rounds per cell, the median of those without a collection kept.</param>
internal sealed class LongestOperationCells(int rounds)
{
    /// <summary>
    /// A thread takes every object, returns them all and takes them all back (ours then holds a stale stack entry for
    /// each); its next takes fail: the longest of the first 16, the median over rounds without a collection.
    /// </summary>
    public double? MeasureLongestFailedAfterRetake(string impl, int size)
    {
        var longest = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            using ISizedPool pool = SizedPools.Create(impl, size);
            if (!pool.CanFail)
            {
                return null;
            }

            int collections = 0;
            double ns = OnThread(() =>
            {
                TakeAll(pool, ReturnAll(pool, TakeAll(pool, size)));
                GC.Collect();
                collections = GC.CollectionCount(0);
                double most = 0;
                for (int i = 0; i < 16; i++)
                {
                    long start = Stopwatch.GetTimestamp();
                    if (pool.TryTakeIdle() is not null)
                    {
                        throw new InvalidOperationException($"{impl}: a take from an exhausted pool succeeded");
                    }

                    most = Math.Max(most, Stopwatch.GetElapsedTime(start).TotalNanoseconds);
                }

                return most;
            });
            if (GC.CollectionCount(0) == collections)
            {
                longest.Add(ns);
            }
        }

        return longest.Count == 0 ? null : Median(longest);
    }

    /// <summary>
    /// A thread takes every object and discards them all, one by one (ours shrinks its registry on the way; the peers,
    /// which do not track their objects, drop each, which times the clock alone): the longest single discard, the median
    /// over rounds without a collection.
    /// </summary>
    public double? MeasureLongestDiscard(string impl, int size)
    {
        var longest = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            using ISizedPool pool = SizedPools.Create(impl, size);
            int collections = 0;
            double ns = OnThread(() =>
            {
                BenchItem[] taken = TakeAll(pool, size);
                GC.Collect();
                collections = GC.CollectionCount(0);
                double most = 0;
                foreach (BenchItem item in taken)
                {
                    long start = Stopwatch.GetTimestamp();
                    pool.Discard(item);
                    most = Math.Max(most, Stopwatch.GetElapsedTime(start).TotalNanoseconds);
                }

                return most;
            });
            if (GC.CollectionCount(0) == collections)
            {
                longest.Add(ns);
            }
        }

        return longest.Count == 0 ? null : Median(longest);
    }
}
