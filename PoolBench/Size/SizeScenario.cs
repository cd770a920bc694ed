using System.Diagnostics;
using NLog;
using PoolBench.Pools.UnderTest;
using PoolBench.Report;
using static PoolBench.Size.SizedPoolWork;

namespace PoolBench.Size;

/// <summary>
/// What a take costs as the pool grows from 1,000 to 1,000,000 objects, ours against
/// <c>DefaultObjectPool</c> and a <c>ConcurrentBag</c> pool in one run: a take of an object the
/// taking thread never took, a first take on a new thread, a take that fails, growth, a take after
/// a trimmed burst, a thread whose id is above 4,096, and how long a 1 ms timed take waits.
/// Most objects are held by other threads throughout, as in a server with that many connections.
/// </summary>
internal sealed class SizeScenario
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

    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    private readonly BenchOptions _options;
    private readonly int[] _sizes;
    private readonly int _rounds;
    private readonly TakeCells _takes;
    private readonly LongestOperationCells _longest;
    private readonly OwnObjectCells _own;

    public SizeScenario(BenchOptions options)
    {
        _options = options;
        _sizes = options.Quick ? [1_000, 10_000] : [1_000, 10_000, 100_000, 1_000_000];
        _rounds = options.Quick ? 3 : 9;
        _takes = new TakeCells(_rounds, options.Quick);
        _longest = new LongestOperationCells(_rounds);
        _own = new OwnObjectCells(_rounds, options.Quick);
    }

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
        int maxPasses = _options.Quick ? 1 : 30;
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

        if (_options.Quick)
        {
            s_log.Info("size: one warm-up pass (quick): the cells may run code still being tiered up");
            return;
        }

        s_log.Warn("size: methods were still being compiled after {0} warm-up passes", maxPasses);
    }

    private IEnumerable<SizeResult> Measure(string impl, int size, ThreadIds threads)
    {
        yield return Cell(impl, size, Steal, () => _takes.MeasureSteal(impl, size));
        yield return Cell(impl, size, NewThread, () => _takes.MeasureNewThread(impl, size));
        yield return Cell(impl, size, Failed, () => _takes.MeasureFailed(impl, size));
        yield return Cell(impl, size, LongestFailedAfterRetake, () => _longest.MeasureLongestFailedAfterRetake(impl, size));
        yield return Cell(impl, size, LongestDiscard, () => _longest.MeasureLongestDiscard(impl, size));
        yield return Cell(impl, size, Growth, () => TakeCells.MeasureGrowth(impl, size));
        yield return Cell(impl, size, AfterBurst, () => TakeCells.MeasureAfterBurst(impl, size));
        (double low, double high) = _own.MeasureOwnObjects(impl, size, threads);
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
                $"(vs 1,000 = ours at N / ours at 1,000; vs ConcurrentBag = ours / ConcurrentBag, both at most 1 is good; vs bag + handle = ours / a ConcurrentBag of handles each claimed by a compare-and-swap; in brackets, the collector's pauses per take){_options.QuickLabel}");
        }

        SizeTables.ThreadIdTable(results, _sizes, threads).Print($"size: a thread whose id is above 4,096 against thread {threads.LowId}, ours{_options.QuickLabel}");
        SizeTables.TimedTable(results, _sizes).Print($"size: how long ours waits in TryTakeSlot(1 ms) on an exhausted pool, ms{_options.QuickLabel}");
    }
}
