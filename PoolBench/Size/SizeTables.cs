using PoolBench.Pools.UnderTest;
using PoolBench.Report;

namespace PoolBench.Size;

/// <summary>The markdown tables of the <c>size</c> scenario.</summary>
internal static class SizeTables
{
    /// <summary>One case: a row per size, ours with its ratio to its own cost at the smallest size and to the bag pool's, then the peers, then the bag of handles and ours over it.</summary>
    public static MarkdownTable NsTable(List<SizeResult> results, string name, int[] sizes)
    {
        var table = new MarkdownTable(
            "objects", "Pool<T>", $"vs {CellText.Count(sizes[0])}", DefaultObjectPoolUnderTest.Name, ConcurrentBagPoolUnderTest.Name, "vs ConcurrentBag",
            SizedPools.BagOfHandles, "vs bag + handle");
        double? smallest = Ns(results, name, SizedPools.Ours, sizes[0]);
        foreach (int size in sizes)
        {
            double? ours = Ns(results, name, SizedPools.Ours, size);
            double? bag = Ns(results, name, ConcurrentBagPoolUnderTest.Name, size);
            double? handles = Ns(results, name, SizedPools.BagOfHandles, size);
            table.Row(
                CellText.Count(size),
                WithGc(results, name, SizedPools.Ours, size),
                CellText.Ratio(ours / smallest),
                WithGc(results, name, DefaultObjectPoolUnderTest.Name, size),
                WithGc(results, name, ConcurrentBagPoolUnderTest.Name, size),
                CellText.Ratio(ours / bag),
                WithGc(results, name, SizedPools.BagOfHandles, size),
                CellText.Ratio(ours / handles));
        }

        return table;
    }

    public static MarkdownTable ThreadIdTable(List<SizeResult> results, int[] sizes, ThreadIds threads)
    {
        var table = new MarkdownTable("objects", $"thread {threads.LowId}, ns/pair", $"thread {CellText.Count(threads.HighId)}, ns/pair", "high / low");
        foreach (int size in sizes)
        {
            double? low = Ns(results, SizeScenario.LowThreadId, SizedPools.Ours, size);
            double? high = Ns(results, SizeScenario.HighThreadId, SizedPools.Ours, size);
            table.Row(CellText.Count(size), CellText.Optional(low), CellText.Optional(high), CellText.Ratio(high / low));
        }

        return table;
    }

    public static MarkdownTable TimedTable(List<SizeResult> results, int[] sizes)
    {
        var table = new MarkdownTable("objects", "median, ms", "max, ms");
        foreach (SizeResult timed in results.Where(r => r.WaitMsMedian is not null).OrderBy(r => Array.IndexOf(sizes, r.Objects)))
        {
            table.Row(CellText.Count(timed.Objects), CellText.Optional(timed.WaitMsMedian, 2), CellText.Optional(timed.WaitMsMax, 2));
        }

        return table;
    }

    /// <summary>ns per take, with the collector's share in brackets where it was measured.</summary>
    private static string WithGc(List<SizeResult> results, string name, string impl, int size) =>
        results.FirstOrDefault(r => r.Case == name && r.Impl == impl && r.Objects == size) is { NsPerOp: double ns } cell
            ? CellText.Number(ns) + (cell.GcNsPerOp is double gc ? $" (GC {CellText.Number(gc)})" : "")
            : "—";

    private static double? Ns(List<SizeResult> results, string name, string impl, int size) =>
        results.FirstOrDefault(r => r.Case == name && r.Impl == impl && r.Objects == size)?.NsPerOp;
}
