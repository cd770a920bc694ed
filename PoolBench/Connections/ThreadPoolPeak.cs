namespace PoolBench.Connections;

/// <summary>
/// The most threads the thread pool had over a stretch of time: <see cref="ThreadPool.ThreadCount"/> read every 10 ms
/// on a thread of its own, which is not one of the pool's, and once more at the end. The pool adds threads a few a
/// second at most and keeps an idle one for 20 s, so a sample this often misses none.
/// </summary>
internal sealed class ThreadPoolPeak : IDisposable
{
    private static readonly TimeSpan s_interval = TimeSpan.FromMilliseconds(10);
    private readonly ManualResetEventSlim _stop = new();
    private readonly Thread _thread;
    private int _peak;

    private ThreadPoolPeak()
    {
        _peak = ThreadPool.ThreadCount;
        _thread = new Thread(Follow) { IsBackground = true, Name = "thread pool peak" };
        _thread.Start();
    }

    /// <summary>Starts following the thread count, from its value now.</summary>
    public static ThreadPoolPeak Start() => new();

    /// <summary>Stops following; the highest count seen.</summary>
    public int Stop()
    {
        _stop.Set();
        _thread.Join();
        return Math.Max(_peak, ThreadPool.ThreadCount);
    }

    public void Dispose()
    {
        if (!_stop.IsSet)
        {
            Stop();
        }

        _stop.Dispose();
    }

    private void Follow()
    {
        while (!_stop.Wait(s_interval))
        {
            _peak = Math.Max(_peak, ThreadPool.ThreadCount);
        }
    }
}
