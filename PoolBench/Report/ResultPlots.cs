using NLog;
using PoolBench.Echo;
using PoolBench.Echo.Soak;
using PoolBench.Pools;
using PoolBench.Pools.UnderTest;
using PoolBench.Size;
using ScottPlot;

namespace PoolBench.Report;

/// <summary>
/// Writes the results as PNG plots: for the pools comparison, ns per take+return pair against
/// workers, one line per implementation, one plot per rental pattern and capacity; for the echo
/// load, messages per second of each server, one bar chart per cell; for the soak, each server's
/// resident memory against time, one line per server. Plots that cannot be drawn
/// (no usable font, no native drawing library) are logged and skipped: the tables and the JSON
/// document carry the same numbers.
/// </summary>
internal static class ResultPlots
{
    private const int Width = 900;
    private const int Height = 500;
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    public static void Write(string folder, IReadOnlyList<object> results, string label)
    {
        // The comparison's cells; the options-cost table's DefaultObjectPool row, reported after them, repeats one of its keys.
        PoolsResult[] pools = results.OfType<PoolsResult>()
            .Where(r => PoolsScenario.Impls.Contains(r.Impl))
            .DistinctBy(r => (r.Impl, r.Pattern, r.Capacity, r.Workers))
            .ToArray();
        EchoResult[] echoes = results.OfType<EchoResult>().Where(r => r.Messages > 0).ToArray();
        SoakResult[] soaks = results.OfType<SoakResult>().Where(r => r.RssMib.Count > 0).ToArray();
        SizeResult[] sizes = results.OfType<SizeResult>().Where(r => r.NsPerOp is not null).ToArray();
        if (pools.Length == 0 && echoes.Length == 0 && soaks.Length == 0 && sizes.Length == 0)
        {
            return;
        }

        try
        {
            PlotFont.Choose();
            Directory.CreateDirectory(folder);
            var written = new List<string>();
            foreach (var cell in pools.GroupBy(r => (r.Pattern, r.Capacity)))
            {
                string path = Path.Combine(folder, $"pools-{cell.Key.Pattern}-capacity-{cell.Key.Capacity}.png");
                PoolsPlot($"{cell.Key.Pattern} rental, capacity {cell.Key.Capacity}{label}", cell.ToArray()).SavePng(path, Width, Height);
                written.Add(path);
            }

            foreach (var cell in echoes.GroupBy(r => (r.Protocol, r.Connections, r.Size, r.Pipeline)))
            {
                (string protocol, int connections, int size, int pipeline) = cell.Key;
                string path = Path.Combine(folder, $"echo-{protocol}-{connections}-conns-{size}-bytes-pipeline-{pipeline}.png");
                string title = $"{protocol.ToUpperInvariant()} echo, {connections} {(protocol == "tcp" ? "connections" : "senders")}, {size} B, pipeline {pipeline}{label}";
                EchoPlot(title, cell.ToArray()).SavePng(path, Width, Height);
                written.Add(path);
            }

            foreach (var cell in sizes.GroupBy(r => r.Case))
            {
                string path = Path.Combine(folder, $"size-{string.Concat(cell.Key.Where(char.IsLetterOrDigit))}.png");
                SizePlot($"size: {cell.Key}{label}", cell.ToArray()).SavePng(path, Width, Height);
                written.Add(path);
            }

            if (soaks.Length > 0)
            {
                string path = Path.Combine(folder, "soak-rss.png");
                SoakPlot($"soak: server resident memory under churn{label}", soaks).SavePng(path, Width, Height);
                written.Add(path);
            }

            s_log.Info("{0} plot(s) written to {1}", written.Count, folder);
        }
        catch (Exception e)
        {
            // The plots only draw numbers the tables and the JSON document already hold: a plot that
            // fails must not fail the run.
            s_log.Error("plots not written: {0}: {1}", e.GetType().Name, e.Message);
        }
    }

    /// <summary>ns per pair against workers, one line per implementation; the workers sit at even steps, labelled with their count.</summary>
    private static Plot PoolsPlot(string title, PoolsResult[] cells)
    {
        int[] workers = cells.Select(r => r.Workers).Distinct().Order().ToArray();
        var plot = new Plot();
        foreach (string impl in PoolsScenario.Impls)
        {
            PoolsResult[] line = cells.Where(r => r.Impl == impl).OrderBy(r => r.Workers).ToArray();
            if (line.Length == 0)
            {
                continue;
            }

            var scatter = plot.Add.Scatter(line.Select(r => (double)Array.IndexOf(workers, r.Workers)).ToArray(), line.Select(r => r.NsPerOp).ToArray());
            scatter.LegendText = impl;
            scatter.LineWidth = impl == OurPoolUnderTest.Name ? 3 : 2;
            scatter.MarkerSize = 7;
        }

        plot.Axes.Bottom.TickGenerator = new ScottPlot.TickGenerators.NumericManual(
            Enumerable.Range(0, workers.Length).Select(i => (double)i).ToArray(), workers.Select(w => CellText.Count(w)).ToArray());
        plot.Axes.SetLimitsY(0, cells.Max(r => r.NsPerOp) * 1.1);
        plot.Title(title);
        plot.XLabel("workers");
        plot.YLabel("ns per take+return pair (median)");
        plot.ShowLegend(Edge.Right);
        return plot;
    }

    /// <summary>ns per operation against the pool's size on a log scale, one line per implementation.</summary>
    private static Plot SizePlot(string title, SizeResult[] cells)
    {
        var plot = new Plot();
        foreach (string impl in SizedPools.Impls)
        {
            SizeResult[] line = cells.Where(r => r.Impl == impl).OrderBy(r => r.Objects).ToArray();
            if (line.Length == 0)
            {
                continue;
            }

            var scatter = plot.Add.Scatter(line.Select(r => Math.Log10(r.Objects)).ToArray(), line.Select(r => r.NsPerOp!.Value).ToArray());
            scatter.LegendText = impl;
            scatter.LineWidth = impl == SizedPools.Ours ? 3 : 2;
            scatter.MarkerSize = 7;
        }

        double[] decades = cells.Select(r => Math.Log10(r.Objects)).Distinct().Order().ToArray();
        plot.Axes.Bottom.TickGenerator = new ScottPlot.TickGenerators.NumericManual(decades, decades.Select(d => CellText.Count((long)Math.Round(Math.Pow(10, d)))).ToArray());
        plot.Axes.SetLimitsY(0, cells.Max(r => r.NsPerOp!.Value) * 1.1);
        plot.Title(title);
        plot.XLabel("objects in the pool");
        plot.YLabel("ns per operation");
        plot.ShowLegend(Edge.Right);
        return plot;
    }

    /// <summary>Messages per second of each server (the median round), one bar each, labelled with its rate.</summary>
    private static Plot EchoPlot(string title, EchoResult[] servers)
    {
        var plot = new Plot();
        Bar[] bars = servers.Select((r, i) => new Bar
        {
            Position = i,
            Value = r.MsgsPerSec,
            Label = CellText.Number(r.MsgsPerSec, 0),
            FillColor = plot.Add.Palette.GetColor(i),
        }).ToArray();
        var barPlot = plot.Add.Bars(bars);
        barPlot.ValueLabelStyle.FontSize = 14;
        plot.Axes.Bottom.TickGenerator = new ScottPlot.TickGenerators.NumericManual(
            Enumerable.Range(0, servers.Length).Select(i => (double)i).ToArray(), servers.Select(r => r.Server).ToArray());
        plot.Axes.Margins(bottom: 0, top: 0.15);
        plot.Title(title);
        plot.YLabel("messages/s (median round)");
        return plot;
    }

    /// <summary>Each server's resident memory, sampled every second of its soak, one line per server.</summary>
    private static Plot SoakPlot(string title, SoakResult[] servers)
    {
        var plot = new Plot();
        foreach (SoakResult server in servers)
        {
            var line = plot.Add.Scatter(Enumerable.Range(1, server.RssMib.Count).Select(second => (double)second).ToArray(), server.RssMib.ToArray());
            line.LegendText = server.Server;
            line.MarkerSize = 0;
            line.LineWidth = 2;
        }

        plot.Axes.SetLimitsY(0, servers.Max(r => r.RssMib.Max()) * 1.1);
        plot.Title(title);
        plot.XLabel("seconds under load");
        plot.YLabel("resident set, MiB");
        plot.ShowLegend(Edge.Bottom);
        return plot;
    }
}
