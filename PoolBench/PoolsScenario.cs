using System.Diagnostics.Metrics;
using PoolLib;

namespace PoolBench;

/// <summary>
/// Our <c>Pool&lt;T&gt;</c> against the pools a .NET user would pick instead, in one run: short and
/// long rentals, capacities 8, 64 and 1024, 1, 2, 4 and 25 workers started together. In a long
/// rental each worker holds <c>max(1, capacity / workers)</c> objects at once, so the workers
/// together never hold more than the capacity (or one each when there are more workers than
/// objects): our pool, which waits at its cap, cannot deadlock on a worker holding part of a set.
/// </summary>
internal sealed class PoolsScenario(BenchOptions options)
{
    private const int OptionsCostCapacity = 64;

    private static readonly int[] s_capacities = [8, 64, 1024];
    private static readonly int[] s_workers = [1, 2, 4, 25];
    private static readonly string[] s_impls = [OurPoolUnderTest.Name, "DefaultObjectPool", "ConcurrentBag", "ConcurrentStack", "new"];

    public void Run(BenchReport report)
    {
        Measurement measurement = Measurement.For(options.Quick);
        var results = new List<PoolsResult>();
        foreach (RentalPattern pattern in Enum.GetValues<RentalPattern>())
        {
            foreach (int capacity in s_capacities)
            {
                var table = new MarkdownTable("workers", "impl", "held each", "ns/pair", "min–max", "Mpairs/s", "B/pair", "barriers/1k pairs", "vs ours");
                foreach (int workers in s_workers)
                {
                    double? oursNs = null;
                    foreach (string impl in s_impls)
                    {
                        var cell = new PoolsCell(report, measurement, pattern, capacity, workers, oursNs);
                        PoolsResult? result = impl switch
                        {
                            OurPoolUnderTest.Name => cell.Measure(new OurPoolUnderTest(capacity)),
                            "DefaultObjectPool" => cell.Measure(new DefaultObjectPoolUnderTest(capacity)),
                            "ConcurrentBag" => cell.Measure(new ConcurrentBagPoolUnderTest(capacity)),
                            "ConcurrentStack" => cell.Measure(new ConcurrentStackPoolUnderTest(capacity)),
                            _ => cell.Measure(new NoPoolUnderTest()),
                        };
                        if (result is null)
                        {
                            table.Row(CellText.Count(workers), impl, CellText.Count(cell.Held), "FAILED", "", "", "", "", "");
                            continue;
                        }

                        oursNs ??= result.Impl == OurPoolUnderTest.Name ? result.NsPerOp : null;
                        results.Add(result);
                        report.Add(result);
                        table.Row(
                            CellText.Count(workers),
                            result.Impl,
                            CellText.Count(result.HeldPerWorker),
                            CellText.Number(result.NsPerOp),
                            CellText.Spread(result.NsPerOpMin, result.NsPerOpMax, v => CellText.Number(v)),
                            CellText.Number(result.Mops, 2),
                            CellText.Number(result.BytesPerOp, 2),
                            CellText.Rate(result.BarriersPer1kPairs),
                            CellText.Ratio(result.RatioVsOurs));
                    }
                }

                table.Print(
                    $"pools: {Name(pattern)} rental, capacity {capacity} (median of {measurement.Iterations}; barriers/1k pairs over all {measurement.Iterations}; " +
                    $"vs ours = its ns / ours, above 1 means ours is faster){options.QuickLabel}");
            }
        }

        OptionsCost(report, measurement).Print(
            $"pools: what the options cost, short rental, capacity {OptionsCostCapacity}, 1 worker (median of {measurement.Iterations}; " +
            $"vs DefaultObjectPool = its ns / DefaultObjectPool's, below 1 means faster){options.QuickLabel}");
        KeyRatios(results).Print($"pools: key ratios, its ns / ours at the median (above 1 means ours is faster){options.QuickLabel}");
        PoolsResult? exhausted = Find(results, "short", 8, 25), roomy = Find(results, "short", 64, 25);
        Console.WriteLine($"Ours exhausted (short rental, capacity 8, 25 workers) takes {CellText.Ratio(exhausted?.NsPerOp / roomy?.NsPerOp)} the time per pair of capacity 64 with 25 workers.");
        Console.WriteLine();
        Console.WriteLine(
            $"Ours, largest barriers/1k pairs: {CellText.Rate(MaxBarriers(results, Demand.Below))} in steady state (the workers together want fewer objects than the capacity), " +
            $"{CellText.Rate(MaxBarriers(results, Demand.Full))} fully subscribed (exactly the capacity, from more than one worker), " +
            $"{CellText.Rate(MaxBarriers(results, Demand.Over))} exhausted (more than the capacity, so takers wait).");
        Console.WriteLine();
    }

    /// <summary>
    /// The one-worker short-rental cell for our pool with default options, with a listener on its
    /// meter, with the options that act on every release, and with leak detection, against
    /// <c>DefaultObjectPool</c> measured first as the fixed point.
    /// </summary>
    private static MarkdownTable OptionsCost(BenchReport report, Measurement measurement)
    {
        var table = new MarkdownTable("impl", "ns/pair", "min–max", "B/pair", "vs DefaultObjectPool");
        var cell = new PoolsCell(report, measurement, RentalPattern.Short, OptionsCostCapacity, workers: 1, oursNs: null);
        PoolsResult? fixedPoint = cell.Measure(new DefaultObjectPoolUnderTest(OptionsCostCapacity));
        AddOptionsCostRow(report, table, fixedPoint, fixedPoint);
        cell = new PoolsCell(report, measurement, RentalPattern.Short, OptionsCostCapacity, workers: 1, oursNs: fixedPoint?.NsPerOp);

        AddOptionsCostRow(report, table, cell.Measure(new OurPoolUnderTest(new BenchItemPool(OptionsCostCapacity), "Pool<T>, default options")), fixedPoint);
        using (MeterListener listener = ListenToPoolLib())
        {
            AddOptionsCostRow(report, table, cell.Measure(new OurPoolUnderTest(new BenchItemPool(OptionsCostCapacity), "Pool<T>, MeterListener on PoolLib")), fixedPoint);
        }

        var releaseChecks = new PoolOptions
        {
            MaxCapacity = OptionsCostCapacity,
            MaxObjectLifetime = TimeSpan.FromHours(1),
            IdleTimeout = TimeSpan.FromMinutes(1),
            MinIdle = 1,
        };
        AddOptionsCostRow(report, table, cell.Measure(new OurPoolUnderTest(new BenchItemPool(releaseChecks), "Pool<T>, MaxObjectLifetime + IdleTimeout")), fixedPoint);
        var leakDetection = new PoolOptions { MaxCapacity = OptionsCostCapacity, LeakDetectionThreshold = TimeSpan.FromMinutes(1) };
        AddOptionsCostRow(report, table, cell.Measure(new OurPoolUnderTest(new BenchItemPool(leakDetection), "Pool<T>, LeakDetectionThreshold")), fixedPoint);
        return table;
    }

    private static void AddOptionsCostRow(BenchReport report, MarkdownTable table, PoolsResult? result, PoolsResult? fixedPoint)
    {
        if (result is null)
        {
            return;
        }

        report.Add(result);
        table.Row(
            result.Impl,
            CellText.Number(result.NsPerOp),
            CellText.Spread(result.NsPerOpMin, result.NsPerOpMax, v => CellText.Number(v)),
            CellText.Number(result.BytesPerOp, 2),
            CellText.Ratio(result.NsPerOp / fixedPoint?.NsPerOp));
    }

    /// <summary>A listener that enables every instrument of the PoolLib meter and takes every measurement, as a metrics exporter would.</summary>
    private static MeterListener ListenToPoolLib()
    {
        var listener = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == "PoolLib")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>(static (instrument, value, tags, state) => { });
        listener.SetMeasurementEventCallback<double>(static (instrument, value, tags, state) => { });
        listener.Start();
        return listener;
    }

    /// <summary>How many objects the workers of a cell want at once, against the capacity.</summary>
    private enum Demand
    {
        Below,
        Full,
        Over,
    }

    private static Demand DemandOf(PoolsResult cell)
    {
        long wanted = (long)cell.Workers * cell.HeldPerWorker;
        return wanted > cell.Capacity ? Demand.Over
            : wanted == cell.Capacity && cell.Workers > 1 ? Demand.Full
            : Demand.Below;
    }

    /// <summary>The largest barriers per 1,000 pairs of ours among the cells of one demand.</summary>
    private static double? MaxBarriers(List<PoolsResult> results, Demand demand) =>
        results
            .Where(r => r.Impl == OurPoolUnderTest.Name && DemandOf(r) == demand)
            .Max(r => r.BarriersPer1kPairs);

    /// <summary>Ours against each peer at 1 and 25 workers.</summary>
    private static MarkdownTable KeyRatios(List<PoolsResult> results)
    {
        string[] peers = results.Select(r => r.Impl).Distinct().Where(impl => impl != OurPoolUnderTest.Name).ToArray();
        var table = new MarkdownTable(["pattern", "capacity", "workers", .. peers]);
        foreach (PoolsResult ours in results.Where(r => r.Impl == OurPoolUnderTest.Name && r.Workers is 1 or 25))
        {
            table.Row([
                ours.Pattern,
                CellText.Count(ours.Capacity),
                CellText.Count(ours.Workers),
                .. peers.Select(peer => CellText.Ratio(results.FirstOrDefault(r =>
                    r.Impl == peer && r.Pattern == ours.Pattern && r.Capacity == ours.Capacity && r.Workers == ours.Workers)?.RatioVsOurs)),
            ]);
        }

        return table;
    }

    private static PoolsResult? Find(List<PoolsResult> results, string pattern, int capacity, int workers) =>
        results.FirstOrDefault(r => r.Impl == OurPoolUnderTest.Name && r.Pattern == pattern && r.Capacity == capacity && r.Workers == workers);

    internal static string Name(RentalPattern pattern) => pattern == RentalPattern.Short ? "short" : "long";
}
