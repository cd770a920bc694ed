using BenchmarkDotNet.Reports;
using PoolBench.Report;

namespace PoolBench.Article;

/// <summary>
/// The article's table, from the BenchmarkDotNet summary of <see cref="ArticleBenchmarks"/>: seconds
/// per cell with the pool's speed-up on one thread and on 25 tasks, and bytes allocated per request.
/// </summary>
internal sealed class ArticleScenario(BenchOptions options)
{
    private static readonly string[] s_modes =
    [
        ArticleBenchmarks.OneThreadNoPoolMode, ArticleBenchmarks.OneThreadPoolMode, ArticleBenchmarks.TasksNoPoolMode, ArticleBenchmarks.TasksPoolMode,
    ];

    public static Type Benchmarks => typeof(ArticleBenchmarks);

    public void Report(Summary summary, BenchReport report)
    {
        List<MeasuredCase> measured = MeasuredCase.From(summary, report, "article");
        var results = new List<Result>();
        foreach (MeasuredCase cell in measured)
        {
            int requests = cell.Parameter<int>(nameof(ArticleBenchmarks.Requests));
            var result = new Result(
                requests, cell.Name, cell.MedianNs / 1e9, cell.MinNs / 1e9, cell.MaxNs / 1e9, cell.BytesPerOp / requests, cell.Iterations);
            results.Add(result);
            report.Add(result);
        }

        int[] rows = results.Select(r => r.Requests).Distinct().Order().ToArray();
        int iterations = results.Select(r => r.Iterations).DefaultIfEmpty().Max();
        TimeTable(results, rows).Print($"article: object requests, seconds per cell (median of {iterations}, min–max){options.QuickLabel}");
        BytesTable(results, rows).Print($"article: allocated bytes per request{options.QuickLabel}");
    }

    private static MarkdownTable TimeTable(List<Result> results, int[] rows)
    {
        var table = new MarkdownTable(["requests", .. s_modes, "pool speed-up, 1 thread", "pool speed-up, 25 tasks"]);
        foreach (int requests in rows)
        {
            Result?[] row = s_modes.Select(mode => results.FirstOrDefault(r => r.Requests == requests && r.Mode == mode)).ToArray();
            table.Row([
                CellText.Count(requests),
                .. row.Select(r => r is null ? "—" : $"{CellText.Seconds(r.Seconds)} ({CellText.Spread(r.SecondsMin, r.SecondsMax, CellText.Seconds)})"),
                CellText.Ratio(row[0]?.Seconds / row[1]?.Seconds),
                CellText.Ratio(row[2]?.Seconds / row[3]?.Seconds),
            ]);
        }

        return table;
    }

    private static MarkdownTable BytesTable(List<Result> results, int[] rows)
    {
        var table = new MarkdownTable(["requests", .. s_modes]);
        foreach (int requests in rows)
        {
            table.Row([
                CellText.Count(requests),
                .. s_modes.Select(mode => results.FirstOrDefault(r => r.Requests == requests && r.Mode == mode) is { } r ? CellText.Optional(r.BytesPerRequest) : "—"),
            ]);
        }

        return table;
    }

    /// <summary>One cell of the article table, as written to JSON. <see cref="BytesPerRequest"/> is null when
    /// BenchmarkDotNet's memory diagnoser gave no figure.</summary>
    private sealed record Result(
        int Requests,
        string Mode,
        double Seconds,
        double SecondsMin,
        double SecondsMax,
        double? BytesPerRequest,
        int Iterations)
    {
        public string Scenario => "article";
    }
}
