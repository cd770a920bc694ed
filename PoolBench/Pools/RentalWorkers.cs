using System.Runtime.CompilerServices;
using PoolBench.Pools.UnderTest;

namespace PoolBench.Pools;

/// <summary>
/// Runs take+return pairs on dedicated worker threads that start once, when the benchmark case
/// does, and serve every invocation of the case, as the threads of a program in steady use would:
/// a pool that keeps state per thread sees the same threads from one invocation to the next. Each
/// <see cref="Run"/> releases the workers together through a start <see cref="Barrier"/> and
/// collects them at an end one, so the benchmark's clock covers every pair of every worker. Every
/// run must finish within the timeout: a pool that loses a wake-up fails the run instead of
/// hanging it. The class is generic over the pool's struct type, so its loop is compiled once for
/// each implementation, with direct calls.
/// </summary>
internal sealed class RentalWorkers<TPool> : IRentalWorkers
    where TPool : struct, IPoolUnderTest
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(60);

    private readonly TPool _pool;
    private readonly RentalPattern _pattern;
    private readonly int _held;
    private readonly long _pairsPerRun;
    private readonly int _spinsPerPair;
    private readonly Thread[] _threads;

    // Both have the workers and the thread that calls Run as participants.
    private readonly Barrier _start;
    private readonly Barrier _end;

    private readonly long[] _completed;
    private readonly Exception?[] _failures;

    // Written by the thread that disposes, before the start barrier, read by the workers after it.
    private bool _stopping;
    private bool _broken;

    /// <param name="pool">The pool, filled; disposed with the workers.</param>
    /// <param name="pattern">Short or long rentals.</param>
    /// <param name="workers">How many worker threads.</param>
    /// <param name="held">How many objects each worker takes before it returns them.</param>
    /// <param name="pairsPerRun">
    /// All pairs of all workers in one run, shared out as evenly as whole pairs allow; a worker whose
    /// share is not a whole number of rounds ends with a shorter round.
    /// </param>
    /// <param name="spinsPerPair">Work between each take and its return, in <see cref="Thread.SpinWait"/> iterations: 0 for none, else a thread that takes less often.</param>
    public RentalWorkers(TPool pool, RentalPattern pattern, int workers, int held, long pairsPerRun, int spinsPerPair = 0)
    {
        _pool = pool;
        _pattern = pattern;
        _held = held;
        _pairsPerRun = pairsPerRun;
        _spinsPerPair = spinsPerPair;
        _completed = new long[workers];
        _failures = new Exception?[workers];
        _start = new Barrier(workers + 1);
        _end = new Barrier(workers + 1);
        _threads = new Thread[workers];
        for (int w = 0; w < workers; w++)
        {
            int worker = w;
            _threads[w] = new Thread(() => Work(worker)) { IsBackground = true, Name = $"rental worker {w}" };
            _threads[w].Start();
        }
    }

    public void Run()
    {
        if (!_start.SignalAndWait(s_timeout) || !_end.SignalAndWait(s_timeout))
        {
            _broken = true;
            throw new TimeoutException($"{_pool.Impl}: a worker did not finish its {_pattern} rentals within {s_timeout.TotalSeconds} s");
        }

        foreach (Exception? failure in _failures)
        {
            if (failure is not null)
            {
                throw new InvalidOperationException($"{_pool.Impl}: a worker failed", failure);
            }
        }

        long done = 0;
        foreach (long completed in _completed)
        {
            done += completed;
        }

        if (done != _pairsPerRun)
        {
            throw new InvalidOperationException($"{_pool.Impl}: workers completed {done} of {_pairsPerRun} pairs");
        }
    }

    /// <summary>Stops the workers and disposes the pool. After a run that timed out nothing is disposed: the workers
    /// stay parked, as background threads, on barriers and a pool that disposing would pull from under them, and an
    /// exception on a worker's thread would end the process before the failure is reported.</summary>
    public void Dispose()
    {
        if (_broken)
        {
            return;
        }

        Volatile.Write(ref _stopping, true);
        if (_start.SignalAndWait(s_timeout))
        {
            foreach (Thread thread in _threads)
            {
                thread.Join(s_timeout);
            }
        }

        _start.Dispose();
        _end.Dispose();
        _pool.Dispose();
    }

    private void Work(int worker)
    {
        var items = new BenchItem[_held];
        while (true)
        {
            _start.SignalAndWait();
            if (Volatile.Read(ref _stopping))
            {
                return;
            }

            long completed = 0;
            try
            {
                completed = RunRounds(items, _pairsPerRun / _threads.Length + (worker < _pairsPerRun % _threads.Length ? 1 : 0));
            }
            catch (Exception e)
            {
                _failures[worker] = e;
            }
            finally
            {
                _completed[worker] = completed;
                _end.SignalAndWait();
            }
        }
    }

    /// <summary>
    /// One run's rentals, <paramref name="pairs"/> in all: a method of its own, called once per run, so
    /// that the runtime's tiered compilation promotes it to fully optimised code as it does any method called often.
    /// </summary>
    private long RunRounds(BenchItem[] items, long pairs)
    {
        if (_spinsPerPair != 0)
        {
            return RunSlowPairs(pairs);
        }

        long rounds = pairs / items.Length;
        for (long round = 0; round < rounds; round++)
        {
            Rent(items, items.Length, (byte)round);
        }

        Rent(items, (int)(pairs % items.Length), (byte)rounds);
        return pairs;
    }

    /// <summary>Short rentals with work between each take and its return.</summary>
    private long RunSlowPairs(long pairs)
    {
        for (long pair = 0; pair < pairs; pair++)
        {
            BenchItem item = _pool.Take();
            item.Buffer[0] = (byte)pair;
            Thread.SpinWait(_spinsPerPair);
            _pool.Return(item);
        }

        return pairs;
    }

    /// <summary>Takes <paramref name="count"/> objects, writes to each, then returns them all.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Rent(BenchItem[] items, int count, byte stamp)
    {
        for (int i = 0; i < count && i < items.Length; i++)
        {
            items[i] = _pool.Take();
            items[i].Buffer[0] = stamp;
        }

        for (int i = 0; i < count && i < items.Length; i++)
        {
            _pool.Return(items[i]);
        }
    }
}
