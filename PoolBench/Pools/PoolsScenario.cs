using BenchmarkDotNet.Reports;
using PoolBench.Pools.UnderTest;
using PoolBench.Report;

namespace PoolBench.Pools;

/// <summary>
/// Our <c>Pool&lt;T&gt;</c> against the pools a .NET user would pick instead, from the
/// BenchmarkDotNet summaries of <see cref="PoolsBenchmarks"/> and <see cref="PoolOptionsCostBenchmarks"/>:
/// per rental pattern a table of ns per take+return pair with ratios against ours, the bytes each
/// implementation allocates per pair, what our options cost, and a line on the exhausted pool.
/// </summary>
internal sealed class PoolsScenario(BenchOptions options)
{
    private static readonly string[] s_impls =
    [
        OurPoolUnderTest.Name, DefaultObjectPoolUnderTest.Name,
        ConcurrentBagPoolUnderTest.Name, BoundedConcurrentBagPoolUnderTest.Name,
        ConcurrentStackPoolUnderTest.Name, BoundedConcurrentStackPoolUnderTest.Name,
        NoPoolUnderTest.Name,
    ];

    // The pools a user would pick instead of ours; "best peer" is the fastest of them in a cell.
    private static readonly string[] s_peers = [.. s_impls.Where(impl => impl is not OurPoolUnderTest.Name and not NoPoolUnderTest.Name)];

    public static IReadOnlyList<Type> Benchmarks => [typeof(PoolsBenchmarks), typeof(PoolOptionsCostBenchmarks)];

    /// <summary>The implementations in the order of the tables and plots.</summary>
    public static IReadOnlyList<string> Impls => s_impls;

    /// <summary>
    /// Prints the tables of the summaries that ran (a filter can leave either out, or some cases) and
    /// adds their results to the report; a cell without a result shows "—", its failure already reported.
    /// </summary>
    public void Report(Summary? comparison, Summary? optionsCost, BenchReport report)
    {
        List<PoolsResult> results = comparison is null ? [] : Comparison(comparison, report);
        int iterations = results.Select(r => r.Iterations).DefaultIfEmpty().Max();
        if (results.Count > 0)
        {
            foreach (RentalPattern pattern in Enum.GetValues<RentalPattern>().Where(p => results.Any(r => r.Pattern == Name(p))))
            {
                TimeTable(results, Name(pattern)).Print(
                    $"pools: {Name(pattern)} rental, ns per take+return pair (median of {iterations}; ours with min–max over all {iterations}; " +
                    $"best peer = the fastest of the other pools; each with vs ours = its ns / ours, above 1 means ours is faster){options.QuickLabel}");
            }

            BytesTable(results).Print($"pools: allocated bytes per pair, the largest of each implementation's cells{options.QuickLabel}");
        }

        if (optionsCost is not null)
        {
            (MarkdownTable table, int optionsIterations) = OptionsCost(optionsCost, report);
            table.Print(
                $"pools: what the options cost, short rental, capacity {PoolOptionsCostBenchmarks.Capacity}, 1 worker (median of {optionsIterations}; " +
                $"vs DefaultObjectPool = its ns / DefaultObjectPool's, below 1 means faster; a slow-take row's against default options' slow takes){options.QuickLabel}");
        }

        if (results.Count > 0)
        {
            int most = results.Max(r => r.Workers);
            PoolsResult? exhausted = Find(results, OurPoolUnderTest.Name, "short", 8, most), roomy = Find(results, OurPoolUnderTest.Name, "short", 64, most);
            Console.WriteLine($"Ours exhausted (short rental, capacity 8, {most} workers) takes {CellText.Ratio(exhausted?.NsPerOp / roomy?.NsPerOp)} the time per pair of capacity 64 with {most} workers.");
            Console.WriteLine();
        }
    }

    internal static string Name(RentalPattern pattern) => pattern == RentalPattern.Short ? "short" : "long";

    private static List<PoolsResult> Comparison(Summary summary, BenchReport report)
    {
        List<MeasuredCase> measured = MeasuredCase.From(summary, report, "pools");
        var results = new List<PoolsResult>();
        foreach (MeasuredCase cell in measured)
        {
            var pattern = cell.Parameter<RentalPattern>(nameof(PoolsBenchmarks.Pattern));
            int capacity = cell.Parameter<int>(nameof(PoolsBenchmarks.Capacity));
            int workers = cell.Parameter<int>(nameof(PoolsBenchmarks.Workers));
            MeasuredCase? ours = measured.FirstOrDefault(c => c.Name == OurPoolUnderTest.Name && c.Parameters.ValueInfo == cell.Parameters.ValueInfo);
            results.Add(new PoolsResult(
                cell.Name, Name(pattern), capacity, workers, PoolsBenchmarks.HeldPerWorker(pattern, capacity, workers),
                cell.MedianNs, cell.MinNs, cell.MaxNs, cell.BytesPerOp, cell.Mops, cell.MedianNs / ours?.MedianNs,
                cell.OperationsPerIteration, cell.Iterations));
        }

        results.Sort((a, b) => (a.Pattern, a.Capacity, a.Workers, Array.IndexOf(s_impls, a.Impl)).CompareTo((b.Pattern, b.Capacity, b.Workers, Array.IndexOf(s_impls, b.Impl))));
        foreach (PoolsResult result in results)
        {
            report.Add(result);
        }

        return results;
    }

    private static MarkdownTable TimeTable(List<PoolsResult> results, string pattern)
    {
        var table = new MarkdownTable(["capacity", "workers", "held each", OurPoolUnderTest.Name, "min–max", "best peer", .. s_impls.Skip(1)]);
        foreach (var cell in results.Where(r => r.Pattern == pattern).GroupBy(r => (r.Capacity, r.Workers, r.HeldPerWorker)))
        {
            PoolsResult? ours = cell.FirstOrDefault(r => r.Impl == OurPoolUnderTest.Name);
            table.Row([
                CellText.Count(cell.Key.Capacity),
                CellText.Count(cell.Key.Workers),
                CellText.Count(cell.Key.HeldPerWorker),
                ours is null ? "—" : CellText.Number(ours.NsPerOp),
                ours is null ? "" : CellText.Spread(ours.NsPerOpMin, ours.NsPerOpMax, v => CellText.Number(v)),
                cell.Where(r => s_peers.Contains(r.Impl)).MinBy(r => r.NsPerOp) is { } best
                    ? $"{best.Impl}, {CellText.Number(best.NsPerOp)} ({CellText.Ratio(best.RatioVsOurs)})"
                    : "—",
                .. s_impls.Skip(1).Select(impl => cell.FirstOrDefault(r => r.Impl == impl) is { } peer
                    ? $"{CellText.Number(peer.NsPerOp)} ({CellText.Ratio(peer.RatioVsOurs)})"
                    : "—"),
            ]);
        }

        return table;
    }

    private static MarkdownTable BytesTable(List<PoolsResult> results)
    {
        string[] patterns = [Name(RentalPattern.Short), Name(RentalPattern.Long)];
        var table = new MarkdownTable(["impl", .. patterns.Select(p => $"{p} rental, B/pair")]);
        foreach (string impl in s_impls)
        {
            table.Row([
                impl,
                .. patterns.Select(pattern => CellText.Optional(
                    results.Where(r => r.Impl == impl && r.Pattern == pattern).Select(r => r.BytesPerOp).DefaultIfEmpty().Max(), 2)),
            ]);
        }

        return table;
    }

    /// <summary>The options-cost rows, each against <c>DefaultObjectPool</c> measured in the same run.</summary>
    private static (MarkdownTable Table, int Iterations) OptionsCost(Summary summary, BenchReport report)
    {
        List<MeasuredCase> measured = MeasuredCase.From(summary, report, "pools");
        var table = new MarkdownTable("impl", "ns/pair", "min–max", "B/pair", "vs DefaultObjectPool");
        MeasuredCase? fixedPoint = measured.FirstOrDefault(c => c.Name == DefaultObjectPoolUnderTest.Name);
        MeasuredCase? slowFixedPoint = measured.FirstOrDefault(c => c.Name == PoolOptionsCostBenchmarks.SlowTakesName);
        foreach (MeasuredCase cell in measured)
        {
            // A slow take does 20 us of work, so its rows compare with default options doing the same.
            MeasuredCase? baseline = cell.Name.EndsWith(PoolOptionsCostBenchmarks.SlowTakesSuffix, StringComparison.Ordinal) ? slowFixedPoint : fixedPoint;
            var result = new PoolsResult(
                cell.Name, Name(RentalPattern.Short), PoolOptionsCostBenchmarks.Capacity, 1, 1, cell.MedianNs, cell.MinNs, cell.MaxNs,
                cell.BytesPerOp, cell.Mops, cell == baseline ? null : cell.MedianNs / baseline?.MedianNs, cell.OperationsPerIteration, cell.Iterations);
            report.Add(result);
            table.Row(
                result.Impl,
                CellText.Number(result.NsPerOp),
                CellText.Spread(result.NsPerOpMin, result.NsPerOpMax, v => CellText.Number(v)),
                CellText.Optional(result.BytesPerOp, 2),
                CellText.Ratio(result.RatioVsOurs));
        }

        return (table, measured.Select(c => c.Iterations).DefaultIfEmpty().Max());
    }

    private static PoolsResult? Find(List<PoolsResult> results, string impl, string pattern, int capacity, int workers) =>
        results.FirstOrDefault(r => r.Impl == impl && r.Pattern == pattern && r.Capacity == capacity && r.Workers == workers);
}
