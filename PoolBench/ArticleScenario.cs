using System.Diagnostics;
using System.Net.Sockets;
using NLog;

namespace PoolBench;

/// <summary>
/// The article's table: N object requests served by creating a <see cref="SocketAsyncEventArgs"/>
/// with a new 1024-byte buffer each time, or by taking one from our pool, on one thread or split
/// over 25 tasks (pool capacity 10, so the tasks contend for it).
/// </summary>
internal sealed class ArticleScenario(BenchOptions options)
{
    public const string OneThreadNoPool = "one-thread-no-pool";
    public const string OneThreadPool = "one-thread-pool";
    public const string TasksNoPool = "tasks-no-pool";
    public const string TasksPool = "tasks-pool";

    private const int BufferSize = 1024;
    private const int Tasks = 25;
    private const int PoolCapacity = 10;

    // What one run of the JIT stage serves (see Measurement): enough for every task to loop.
    private const int JitStageRequests = 1_000;

    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();
    private static readonly string[] s_modes = [OneThreadNoPool, OneThreadPool, TasksNoPool, TasksPool];

    public void Run(BenchReport report)
    {
        int[] rows = [1_000, 10_000, 25_000, 50_000, 1_000_000];
        Measurement measurement = Measurement.For(options.Quick);
        var results = new List<ArticleResult>();
        foreach (int requests in rows)
        {
            foreach (string mode in s_modes)
            {
                s_log.Info("article: {0} requests, {1}", requests, mode);
                Sample sample = measurement.Run(() => RunOnce(mode, requests), () => RunOnce(mode, JitStageRequests));
                var result = new ArticleResult(
                    requests, mode, sample.MedianSeconds, sample.MinSeconds, sample.MaxSeconds, sample.BytesPerOp, sample.Iterations);
                results.Add(result);
                report.Add(result);
            }
        }

        TimeTable(results, rows).Print($"article: object requests, seconds per cell (median of {measurement.Iterations}, min–max){options.QuickLabel}");
        BytesTable(results, rows).Print($"article: allocated bytes per request (median){options.QuickLabel}");
    }

    private static MarkdownTable TimeTable(List<ArticleResult> results, int[] rows)
    {
        var table = new MarkdownTable(["requests", .. s_modes, "pool speed-up, 1 thread", "pool speed-up, 25 tasks"]);
        foreach (int requests in rows)
        {
            ArticleResult[] row = results.Where(r => r.Requests == requests).ToArray();
            table.Row([
                CellText.Count(requests),
                .. row.Select(r => $"{CellText.Seconds(r.Seconds)} ({CellText.Spread(r.SecondsMin, r.SecondsMax, CellText.Seconds)})"),
                CellText.Ratio(row[0].Seconds / row[1].Seconds),
                CellText.Ratio(row[2].Seconds / row[3].Seconds),
            ]);
        }

        return table;
    }

    private static MarkdownTable BytesTable(List<ArticleResult> results, int[] rows)
    {
        var table = new MarkdownTable(["requests", .. s_modes]);
        foreach (int requests in rows)
        {
            table.Row([CellText.Count(requests), .. results.Where(r => r.Requests == requests).Select(r => CellText.Number(r.BytesPerRequest))]);
        }

        return table;
    }

    private static RunResult RunOnce(string mode, int requests)
    {
        using var pool = new ArticleArgsPool(BufferSize, PoolCapacity);
        Action<int> serve = mode is OneThreadPool or TasksPool ? count => RequestsFromPool(pool, count) : RequestsWithoutPool;
        return mode is OneThreadNoPool or OneThreadPool ? OnOneThread(requests, serve) : OnTasks(requests, serve);
    }

    /// <summary>Runs all requests on this thread; allocations are the process-wide delta over the run.</summary>
    private static RunResult OnOneThread(int requests, Action<int> serve)
    {
        long allocated = GC.GetTotalAllocatedBytes(true);
        long start = Stopwatch.GetTimestamp();
        serve(requests);
        TimeSpan elapsed = Stopwatch.GetElapsedTime(start);
        return new RunResult(elapsed, GC.GetTotalAllocatedBytes(true) - allocated, requests);
    }

    /// <summary>
    /// Splits the requests over 25 tasks, as the article does; the time includes starting them.
    /// Allocations are counted on the thread of each task around its own requests, so the task
    /// objects themselves are not charged to the requests.
    /// </summary>
    private static RunResult OnTasks(int requests, Action<int> serve)
    {
        long allocated = 0;
        long start = Stopwatch.GetTimestamp();
        var tasks = new Task[Tasks];
        for (int t = 0; t < Tasks; t++)
        {
            int count = requests / Tasks + (t < requests % Tasks ? 1 : 0);
            tasks[t] = Task.Run(() =>
            {
                long before = GC.GetAllocatedBytesForCurrentThread();
                serve(count);
                Interlocked.Add(ref allocated, GC.GetAllocatedBytesForCurrentThread() - before);
            });
        }

        Task.WaitAll(tasks);
        return new RunResult(Stopwatch.GetElapsedTime(start), allocated, requests);
    }

    private static void RequestsWithoutPool(int count)
    {
        for (int i = 0; i < count; i++)
        {
            var args = new SocketAsyncEventArgs();
            args.SetBuffer(new byte[BufferSize], 0, BufferSize);
            Use(args, i);
            args.Dispose();
        }
    }

    private static void RequestsFromPool(ArticleArgsPool pool, int count)
    {
        for (int i = 0; i < count; i++)
        {
            using var slot = pool.TakeSlot();
            Use(slot.Object, i);
        }
    }

    /// <summary>The same token work on every object, so neither column measures an empty loop.</summary>
    private static void Use(SocketAsyncEventArgs args, int request) => args.Buffer![request % BufferSize] = (byte)request;
}
