using System.Diagnostics;
using PoolBench.Pools.UnderTest;
using static PoolBench.Size.SizedPoolWork;

namespace PoolBench.Size;

/// <summary>
/// The <c>size</c> cells of a single take: of an object another thread returned, a new thread's first, one that
/// fails, one that creates while the pool grows, and one after a trimmed burst.
/// </summary>
/// <param name="rounds">Rounds per cell, the median kept.</param>
/// <param name="quick">Whether the run is a smoke test, with fewer takes.</param>
internal sealed class TakeCells(int rounds, bool quick)
{
    // Rounds of the cells that make their pool afresh each round.
    private const int FreshPoolRounds = 3;

    /// <summary>Another thread holds every object; in each round it returns a batch, and a thread that never took any takes them.</summary>
    public double? MeasureSteal(string impl, int size)
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        var held = new Queue<BenchItem>(OnThread(() => TakeAll(pool, size)));
        int batch = Math.Min(1_000, size / 2);
        var perTake = new List<double>();
        for (int round = 0; round < rounds; round++)
        {
            BenchItem[] returned = [.. Enumerable.Range(0, batch).Select(_ => held.Dequeue())];
            OnThread(() => ReturnAll(pool, returned));
            (BenchItem[] taken, double ns) = OnThread(() => TimeTakes(pool, batch));
            perTake.Add(ns);
            taken.ToList().ForEach(held.Enqueue);
        }

        return Median(perTake);
    }

    /// <summary>Every object but one is held; a new thread, kept alive afterwards so that its id is not reused, takes that one.</summary>
    public double? MeasureNewThread(string impl, int size)
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        BenchItem[] held = OnThread(() => TakeAll(pool, size));
        OnThread(() => pool.Return(held[0]));
        var perTake = new List<double>();
        using var done = new ManualResetEventSlim();
        GC.Collect();
        var takers = new List<Thread>();
        for (int round = 0; round < rounds * 10; round++)
        {
            using var taken = new ManualResetEventSlim();
            var taker = new Thread(() =>
            {
                long start = Stopwatch.GetTimestamp();
                BenchItem item = pool.TakeOrCreate();
                perTake.Add(Stopwatch.GetElapsedTime(start).TotalNanoseconds);
                pool.Return(item);
                taken.Set();
                done.Wait();
            });
            taker.Start();
            taken.Wait();
            takers.Add(taker);
        }

        done.Set();
        takers.ForEach(t => t.Join());
        return Median(perTake);
    }

    /// <summary>Every object is held by another thread; takes that may fail fail.</summary>
    public double? MeasureFailed(string impl, int size)
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        if (!pool.CanFail)
        {
            return null;
        }

        OnThread(() => TakeAll(pool, size));
        int takes = quick ? 10_000 : 200_000;
        GC.Collect();
        return OnThread(() =>
        {
            long start = Stopwatch.GetTimestamp();
            for (int i = 0; i < takes; i++)
            {
                if (pool.TryTakeIdle() is not null)
                {
                    throw new InvalidOperationException($"{impl}: a take from an exhausted pool succeeded");
                }
            }

            return Stopwatch.GetElapsedTime(start).TotalNanoseconds / takes;
        });
    }

    /// <summary>An empty pool, filled by takes that each create an object.</summary>
    public static (double?, double?) MeasureGrowth(string impl, int size) => MedianOfRounds(() =>
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        return OnThread(() => TimeCreatingTakes(pool, size));
    });

    /// <summary>A burst to the size, trimmed back to four objects, which another thread then holds: the next takes create.</summary>
    public static (double?, double?) MeasureAfterBurst(string impl, int size) => MedianOfRounds(() =>
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        if (!pool.CanTrim)
        {
            return (null, null);
        }

        OnThread(() => ReturnAll(pool, TakeAll(pool, size)));
        pool.Trim();
        OnThread(() => TakeAll(pool, 4));
        return OnThread(() => TimeCreatingTakes(pool, Math.Min(10_000, size - 4)));
    });

    /// <summary>A cell that makes its pool afresh, run in rounds, the median kept: one round alone moves by several times with what ran before it.</summary>
    private static (double?, double?) MedianOfRounds(Func<(double? Ns, double? GcNs)> round)
    {
        (double? Ns, double? GcNs)[] rounds = [.. Enumerable.Range(0, FreshPoolRounds).Select(_ => round())];
        return rounds[0].Ns is null ? rounds[0] : rounds.OrderBy(r => r.Ns).ElementAt(rounds.Length / 2);
    }
}
