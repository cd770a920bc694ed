using System.Diagnostics;
using NLog;
using PoolBench.Echo.Load;
using PoolBench.Resp;

namespace PoolBench.Connections;

/// <summary>
/// One test of a .NET peer, run as redis-benchmark runs one: a fixed number of requests shared by the workers, each
/// worker with one request in flight. The workers are started first and wait at a gate, so that what starting them
/// allocates falls before the measured window; the gate opens them all at once, and the window ends when the last
/// request is answered. Each worker times its requests, from before its take to after its release, in a histogram of
/// its own. Around the window: this process's allocation (every thread's, <c>GC.GetTotalAllocatedBytes(true)</c>) and
/// the thread pool's most threads.
/// </summary>
internal sealed class RequestRun
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    /// <summary>How long one test may take: far more than 100,000 requests need at a thousand a second.</summary>
    private static readonly TimeSpan s_limit = TimeSpan.FromMinutes(2);

    private readonly TaskCompletionSource _gate = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly int _requests;
    private int _claimed;
    private long _errors;

    private RequestRun(int requests) => _requests = requests;

    /// <summary>Completes when the measured window opens; a worker awaits it before its first request.</summary>
    public Task Started => _gate.Task;

    /// <summary>
    /// Runs one test: <paramref name="worker"/> is called <paramref name="workers"/> times, on this thread, and must await
    /// <see cref="Started"/> first, then run requests while <see cref="TryClaim"/> grants one.
    /// </summary>
    /// <exception cref="TimeoutException">The requests were not all answered within two minutes; the workers still waiting
    /// are left behind.</exception>
    public static async Task<TestRound> MeasureAsync(string test, int workers, int requests, Func<RequestRun, LatencyHistogram, Task> worker)
    {
        var run = new RequestRun(requests);
        var latencies = new LatencyHistogram[workers];
        var tasks = new Task[workers];
        for (int i = 0; i < workers; i++)
        {
            latencies[i] = new LatencyHistogram();
            tasks[i] = worker(run, latencies[i]);
        }

        Task all = Task.WhenAll(tasks).WaitAsync(s_limit);
        using var threads = ThreadPoolPeak.Start();
        long allocated = GC.GetTotalAllocatedBytes(precise: true);
        long started = Stopwatch.GetTimestamp();
        run._gate.SetResult();
        await all.ConfigureAwait(false);
        TimeSpan elapsed = Stopwatch.GetElapsedTime(started);
        allocated = GC.GetTotalAllocatedBytes(precise: true) - allocated;
        int peakThreads = threads.Stop();

        var latency = new LatencyHistogram();
        foreach (LatencyHistogram histogram in latencies)
        {
            latency.Add(histogram);
        }

        var figures = new RequestFigures(test, requests / elapsed.TotalSeconds, Milliseconds(latency, 50), Milliseconds(latency, 99));
        return new TestRound(figures, requests, allocated, peakThreads, run._errors);
    }

    /// <summary>Grants the next request of the run, or none once all are taken.</summary>
    public bool TryClaim() => Interlocked.Increment(ref _claimed) <= _requests;

    /// <summary>Counts a request that failed; the first failure of a run is logged.</summary>
    public void Failed(Exception failure)
    {
        if (Interlocked.Increment(ref _errors) == 1)
        {
            s_log.Warn("connections: a request failed: {0}", failure.Message);
        }
    }

    private static double Milliseconds(LatencyHistogram latency, double percentile) => (latency.PercentileMicroseconds(percentile) ?? 0) / 1000;
}
