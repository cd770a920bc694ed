using System.Diagnostics;
using NLog;
using PoolBench.Pools.UnderTest;
using PoolBench.Report;

namespace PoolBench.Size;

/// <summary>
/// What a take costs as the pool grows from 1,000 to 1,000,000 objects, ours against
/// <c>DefaultObjectPool</c> and a <c>ConcurrentBag</c> pool in one run: a take of an object the
/// taking thread never took, a first take on a new thread, a take that fails, growth, a take after
/// a trimmed burst, a thread whose id is above 4,096, and how long a 1 ms timed take waits.
/// Most objects are held by other threads throughout, as in a server with that many connections.
/// </summary>
internal sealed class SizeScenario(BenchOptions options)
{
    public const string Steal = "take of an object the thread never took";
    public const string NewThread = "first take on a new thread";
    public const string Failed = "failed take";
    public const string LongestFailedAfterRetake = "longest failed take after a thread took every object back";
    public const string LongestDiscard = "longest discarding release";
    public const string Growth = "growth: each take creates";
    public const string AfterBurst = "take after a trimmed burst";
    public const string HighThreadId = "own object, thread id above 4,096";
    public const string LowThreadId = "own object, thread id below 100";

    private const int FreshPoolRounds = 3;

    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    private readonly int[] _sizes = options.Quick ? [1_000, 10_000] : [1_000, 10_000, 100_000, 1_000_000];
    private readonly int _rounds = options.Quick ? 3 : 9;

    public void Run(BenchReport report)
    {
        var results = new List<SizeResult>();
        using var threads = ThreadIds.Reserve(aboveId: 4_096);
        s_log.Info("size: threads {0} and {1} run the own-object cells", threads.LowId, threads.HighId);

        WarmUp(threads);
        foreach (int size in _sizes)
        {
            foreach (string impl in SizedPools.Impls)
            {
                s_log.Info("size: {0}, {1} objects", impl, CellText.Count(size));
                results.AddRange(Measure(impl, size, threads));
            }

            results.AddRange(TimedTakes(size));
        }

        results.ForEach(report.Add);
        Print(results, threads);
    }

    /// <summary>
    /// Passes at the smallest size, not reported, until two in a row compile no method: then every cell
    /// runs the code a long-running process runs, ours and the peers alike, not code still being tiered up.
    /// A quick run, a smoke test, makes one.
    /// </summary>
    private void WarmUp(ThreadIds threads)
    {
        int maxPasses = options.Quick ? 1 : 30;
        long compiled = -1;
        int quietPasses = 0;
        for (int pass = 1; pass <= maxPasses; pass++)
        {
            foreach (string impl in SizedPools.Impls)
            {
                _ = Measure(impl, _sizes[0], threads).ToList();
            }

            _ = TimedTakes(_sizes[0]).ToList();

            // The runtime recompiles hot methods in the background, once no method has been compiled for 100 ms.
            Thread.Sleep(TimeSpan.FromMilliseconds(300));
            long now = System.Runtime.JitInfo.GetCompiledMethodCount();
            quietPasses = now == compiled ? quietPasses + 1 : 0;
            compiled = now;
            if (quietPasses == 2)
            {
                s_log.Info("size: warm after {0} passes, {1} methods compiled", pass, now);
                return;
            }
        }

        if (options.Quick)
        {
            s_log.Info("size: one warm-up pass (quick): the cells may run code still being tiered up");
            return;
        }

        s_log.Warn("size: methods were still being compiled after {0} warm-up passes", maxPasses);
    }

    private IEnumerable<SizeResult> Measure(string impl, int size, ThreadIds threads)
    {
        yield return Cell(impl, size, Steal, () => MeasureSteal(impl, size));
        yield return Cell(impl, size, NewThread, () => MeasureNewThread(impl, size));
        yield return Cell(impl, size, Failed, () => MeasureFailed(impl, size));
        yield return Cell(impl, size, LongestFailedAfterRetake, () => MeasureLongestFailedAfterRetake(impl, size));
        yield return Cell(impl, size, LongestDiscard, () => MeasureLongestDiscard(impl, size));
        yield return Cell(impl, size, Growth, () => MeasureGrowth(impl, size));
        yield return Cell(impl, size, AfterBurst, () => MeasureAfterBurst(impl, size));
        (double low, double high) = MeasureOwnObjects(impl, size, threads);
        yield return Cell(impl, size, LowThreadId, () => low);
        yield return Cell(impl, size, HighThreadId, () => high);
    }

    private static SizeResult Cell(string impl, int size, string name, Func<double?> measure) => Cell(impl, size, name, () => (measure(), null));

    private static SizeResult Cell(string impl, int size, string name, Func<(double? Ns, double? GcNs)> measure)
    {
        (double? ns, double? gcNs) = measure();
        GC.Collect();
        return new SizeResult(name, impl, size, ns, gcNs, null, null);
    }

    /// <summary>Another thread holds every object; in each round it returns a batch, and a thread that never took any takes them.</summary>
    private double? MeasureSteal(string impl, int size)
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        var held = new Queue<BenchItem>(OnThread(() => TakeAll(pool, size)));
        int batch = Math.Min(1_000, size / 2);
        var perTake = new List<double>();
        for (int round = 0; round < _rounds; round++)
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
    private double? MeasureNewThread(string impl, int size)
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        BenchItem[] held = OnThread(() => TakeAll(pool, size));
        OnThread(() => pool.Return(held[0]));
        var perTake = new List<double>();
        using var done = new ManualResetEventSlim();
        GC.Collect();
        var takers = new List<Thread>();
        for (int round = 0; round < _rounds * 10; round++)
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
    private double? MeasureFailed(string impl, int size)
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        if (!pool.CanFail)
        {
            return null;
        }

        OnThread(() => TakeAll(pool, size));
        int takes = options.Quick ? 10_000 : 200_000;
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

    /// <summary>
    /// A thread takes every object, returns them all and takes them all back (ours then holds a stale stack entry for
    /// each); its next takes fail: the longest of the first 16, the median over rounds without a collection.
    /// </summary>
    private double? MeasureLongestFailedAfterRetake(string impl, int size)
    {
        var longest = new List<double>();
        for (int round = 0; round < _rounds; round++)
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
    private double? MeasureLongestDiscard(string impl, int size)
    {
        var longest = new List<double>();
        for (int round = 0; round < _rounds; round++)
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

    /// <summary>An empty pool, filled by takes that each create an object.</summary>
    private static (double?, double?) MeasureGrowth(string impl, int size) => MedianOfRounds(() =>
    {
        using ISizedPool pool = SizedPools.Create(impl, size);
        return OnThread(() => TimeCreatingTakes(pool, size));
    });

    /// <summary>A burst to the size, trimmed back to four objects, which another thread then holds: the next takes create.</summary>
    private static (double?, double?) MeasureAfterBurst(string impl, int size) => MedianOfRounds(() =>
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

    /// <summary>
    /// Two pools, each with every object but one held; the low-id thread takes and returns that one in
    /// one pool, the high-id thread in the other, round by round in turn, the median of each kept: a
    /// process's speed moves for seconds at a time, and rounds in turn see the same moves.
    /// </summary>
    private (double Low, double High) MeasureOwnObjects(string impl, int size, ThreadIds threads)
    {
        using ISizedPool lowPool = SizedPools.Create(impl, size);
        using ISizedPool highPool = SizedPools.Create(impl, size);
        foreach (ISizedPool pool in new[] { lowPool, highPool })
        {
            BenchItem[] held = OnThread(() => TakeAll(pool, size));
            OnThread(() => pool.Return(held[0]));
        }

        int pairs = (options.Quick ? 100_000 : 5_000_000) / _rounds;
        var low = new List<double>();
        var high = new List<double>();
        GC.Collect();
        for (int round = 0; round < _rounds; round++)
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

    /// <summary>Ours exhausted: how long a take with a 1 ms timeout waits before it gives up.</summary>
    private IEnumerable<SizeResult> TimedTakes(int size)
    {
        using ISizedPool pool = SizedPools.Create(SizedPools.Ours, size);
        OnThread(() => TakeAll(pool, size));

        // A collection still running from the filling (or a cell before) would hold the one core the waiter wakes on.
        GC.Collect();
        GC.WaitForPendingFinalizers();
        double[] waits = OnThread(() => Enumerable.Range(0, _rounds * 5).Select(_ =>
        {
            long start = Stopwatch.GetTimestamp();
            if (pool.TryTake(TimeSpan.FromMilliseconds(1)))
            {
                throw new InvalidOperationException("a timed take from an exhausted pool succeeded");
            }

            return Stopwatch.GetElapsedTime(start).TotalMilliseconds;
        }).ToArray());
        yield return new SizeResult("timed take of 1 ms", SizedPools.Ours, size, null, null, Median(waits), waits.Max());
    }

    private static BenchItem[] TakeAll(ISizedPool pool, int count) => [.. Enumerable.Range(0, count).Select(_ => pool.TakeOrCreate())];

    private static int ReturnAll(ISizedPool pool, BenchItem[] items)
    {
        Array.ForEach(items, pool.Return);
        return items.Length;
    }

    /// <summary>Takes that each make an object: ns per take, and how much of it the collector paused the process.</summary>
    private static (double?, double?) TimeCreatingTakes(ISizedPool pool, int count)
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
    private static (BenchItem[] Taken, double Ns) TimeTakes(ISizedPool pool, int count, bool collectFirst = true)
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
    private static TResult OnThread<TResult>(Func<TResult> body)
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

    private static void OnThread(Action body) => OnThread(() =>
    {
        body();
        return 0;
    });

    private static double? Median(IReadOnlyCollection<double> values) =>
        values.Count == 0 ? null : values.Order().ElementAt(values.Count / 2);

    private void Print(List<SizeResult> results, ThreadIds threads)
    {
        foreach (string name in new[] { Steal, NewThread, Failed, LongestFailedAfterRetake, LongestDiscard, Growth, AfterBurst, LowThreadId, HighThreadId })
        {
            string unit = name switch
            {
                LowThreadId or HighThreadId => "take+return pair",
                LongestDiscard => "discard",
                _ => "take",
            };
            SizeTables.NsTable(results, name, _sizes).Print($"size: {name}, ns per {unit} " +
                $"(vs 1,000 = ours at N / ours at 1,000; vs ConcurrentBag = ours / ConcurrentBag, both at most 1 is good; vs bag + handle = ours / a ConcurrentBag of handles each claimed by a compare-and-swap; in brackets, the collector's pauses per take){options.QuickLabel}");
        }

        SizeTables.ThreadIdTable(results, _sizes, threads).Print($"size: a thread whose id is above 4,096 against thread {threads.LowId}, ours{options.QuickLabel}");
        SizeTables.TimedTable(results, _sizes).Print($"size: how long ours waits in TryTakeSlot(1 ms) on an exhausted pool, ms{options.QuickLabel}");
    }

    private sealed class ExceptionCarrier
    {
        public Exception? Value { get; set; }
    }
}
