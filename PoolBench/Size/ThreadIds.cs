namespace PoolBench.Size;

/// <summary>
/// Two worker threads, one with a low managed id and one whose id is above a bound, and the threads
/// held alive to reach that id: the runtime reuses the id of a thread that has ended, so only threads
/// alive at once get ids that high.
/// </summary>
internal sealed class ThreadIds : IDisposable
{
    private readonly Worker _low;
    private readonly Worker _high;
    private readonly List<Thread> _blockers;
    private readonly ManualResetEventSlim _release;

    private ThreadIds(Worker low, Worker high, List<Thread> blockers, ManualResetEventSlim release)
    {
        _low = low;
        _high = high;
        _blockers = blockers;
        _release = release;
    }

    public int LowId => _low.Id;

    public int HighId => _high.Id;

    public static ThreadIds Reserve(int aboveId)
    {
        var low = new Worker(new Thread(Worker.Loop));
        var release = new ManualResetEventSlim();
        var blockers = new List<Thread>();
        while (true)
        {
            var thread = new Thread(Worker.Loop, maxStackSize: 256 * 1024);
            if (thread.ManagedThreadId > aboveId)
            {
                return new ThreadIds(low, new Worker(thread), blockers, release);
            }

            var blocker = new Thread(() => release.Wait(), maxStackSize: 256 * 1024) { IsBackground = true };
            blocker.Start();
            blockers.Add(blocker);
        }
    }

    public double RunLow(Func<double> body) => _low.Run(body);

    public double RunHigh(Func<double> body) => _high.Run(body);

    public void Dispose()
    {
        _low.Dispose();
        _high.Dispose();
        _release.Set();
        _blockers.ForEach(blocker => blocker.Join());
        _release.Dispose();
    }

    /// <summary>A thread that runs what it is given, one thing at a time, until disposed.</summary>
    private sealed class Worker : IDisposable
    {
        private readonly Thread _thread;
        private readonly System.Collections.Concurrent.BlockingCollection<Action> _work = [];

        public Worker(Thread thread)
        {
            _thread = thread;
            _thread.IsBackground = true;
            _thread.Start(_work);
        }

        public int Id => _thread.ManagedThreadId;

        public static void Loop(object? work)
        {
            foreach (Action item in ((System.Collections.Concurrent.BlockingCollection<Action>)work!).GetConsumingEnumerable())
            {
                item();
            }
        }

        public double Run(Func<double> body)
        {
            double result = 0;
            Exception? failure = null;
            using var done = new ManualResetEventSlim();
            _work.Add(() =>
            {
                try
                {
                    result = body();
                }
                catch (Exception e)
                {
                    failure = e;
                }

                done.Set();
            });
            done.Wait();
            return failure is null ? result : throw new InvalidOperationException("a size cell failed", failure);
        }

        public void Dispose()
        {
            _work.CompleteAdding();
            _thread.Join();
            _work.Dispose();
        }
    }
}
