using System.Diagnostics;
using PoolBench.Pools.UnderTest;

namespace PoolBench.Size;

/// <summary>What every <c>size</c> cell does with its pools: take, return and time on a thread of the cell's own.</summary>
internal static class SizedPoolWork
{
    public static BenchItem[] TakeAll(ISizedPool pool, int count) => [.. Enumerable.Range(0, count).Select(_ => pool.TakeOrCreate())];

    public static int ReturnAll(ISizedPool pool, BenchItem[] items)
    {
        Array.ForEach(items, pool.Return);
        return items.Length;
    }

    /// <summary>Takes that each make an object: ns per take, and how much of it the collector paused the process.</summary>
    public static (double?, double?) TimeCreatingTakes(ISizedPool pool, int count)
    {
        GC.Collect();
        TimeSpan paused = GC.GetTotalPauseDuration();
        double ns = TimeTakes(pool, count, collectFirst: false).Ns;
        return (ns, (GC.GetTotalPauseDuration() - paused).TotalNanoseconds / count);
    }

    /// <summary>
    /// Takes <paramref name="count"/> objects, writing into each as a user would, after a full collection
    /// unless told not to, so that none pays for an earlier cell's garbage.
    /// </summary>
    public static (BenchItem[] Taken, double Ns) TimeTakes(ISizedPool pool, int count, bool collectFirst = true)
    {
        var taken = new BenchItem[count];
        if (collectFirst)
        {
            GC.Collect();
        }

        long start = Stopwatch.GetTimestamp();
        for (int i = 0; i < count; i++)
        {
            BenchItem item = pool.TakeOrCreate();
            item.Buffer[0] = (byte)i;
            taken[i] = item;
        }

        return (taken, Stopwatch.GetElapsedTime(start).TotalNanoseconds / count);
    }

    /// <summary>Runs <paramref name="body"/> on a thread of its own, which ends before this returns.</summary>
    public static TResult OnThread<TResult>(Func<TResult> body)
    {
        TResult result = default!;
        ExceptionCarrier failure = new();
        var thread = new Thread(() =>
        {
            try
            {
                result = body();
            }
            catch (Exception e)
            {
                failure.Value = e;
            }
        }, maxStackSize: 1 << 20);
        thread.Start();
        thread.Join();
        return failure.Value is null ? result : throw new InvalidOperationException("a size cell failed", failure.Value);
    }

    public static void OnThread(Action body) => OnThread(() =>
    {
        body();
        return 0;
    });

    public static double? Median(IReadOnlyCollection<double> values) =>
        values.Count == 0 ? null : values.Order().ElementAt(values.Count / 2);

    private sealed class ExceptionCarrier
    {
        public Exception? Value { get; set; }
    }
}
