using System.Diagnostics;
using PoolLib.Internal;

namespace PoolBench;

/// <summary>
/// Runs take+return pairs on dedicated worker threads that start once, when the cell does, and
/// serve every run of the cell, as the threads of a program in steady use would: a pool that keeps
/// state per thread sees the same threads from one iteration to the next. Each run releases the
/// workers together through a start <see cref="Barrier"/> and collects them at an end one; their
/// post-phase actions read the clock, the process-wide allocation counter and our pool library's
/// count of process-wide memory barriers while every worker is parked. Every run must finish within
/// the timeout: a pool that loses a wake-up fails the run instead of hanging it. The class is
/// generic over the pool's struct type, so its loop is compiled once for each implementation.
/// </summary>
internal sealed class RentalWorkers<TPool> : IDisposable
    where TPool : struct, IPoolUnderTest
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(60);

    private readonly TPool _pool;
    private readonly RentalPattern _pattern;
    private readonly int _workers;
    private readonly int _held;
    private readonly Thread[] _threads;

    // Both have the workers and the measuring thread as participants.
    private readonly Barrier _start;
    private readonly Barrier _end;

    private readonly long[] _completed;
    private readonly Exception?[] _failures;

    // Written by the measuring thread before the start barrier, read by the workers after it; 0 stops them.
    private long _rounds;
    private long _startAllocated, _endAllocated, _startStamp, _endStamp, _startBarriers, _endBarriers;
    private bool _broken;

    public RentalWorkers(TPool pool, RentalPattern pattern, int workers, int held)
    {
        _pool = pool;
        _pattern = pattern;
        _workers = workers;
        _held = held;
        _completed = new long[workers];
        _failures = new Exception?[workers];
        _start = new Barrier(workers + 1, _ =>
        {
            _startAllocated = GC.GetTotalAllocatedBytes(true);
            _startBarriers = ForeignAccessGate.ProcessWideBarriers;
            _startStamp = Stopwatch.GetTimestamp();
        });
        _end = new Barrier(workers + 1, _ =>
        {
            _endStamp = Stopwatch.GetTimestamp();
            _endBarriers = ForeignAccessGate.ProcessWideBarriers;
            _endAllocated = GC.GetTotalAllocatedBytes(true);
        });
        _threads = new Thread[workers];
        for (int w = 0; w < workers; w++)
        {
            int worker = w;
            _threads[w] = new Thread(() => Work(worker)) { IsBackground = true };
            _threads[w].Start();
        }
    }

    public RunResult Run(long pairs)
    {
        long rounds = Math.Max(1, pairs / _workers / _held);
        Array.Clear(_completed);
        Array.Clear(_failures);
        Volatile.Write(ref _rounds, rounds);
        if (!_start.SignalAndWait(s_timeout) || !_end.SignalAndWait(s_timeout))
        {
            _broken = true;
            throw new TimeoutException($"{_pool.Impl}: a worker did not finish its {_pattern} rentals within {s_timeout.TotalSeconds} s");
        }

        if (_failures.FirstOrDefault(f => f is not null) is Exception failure)
        {
            throw new InvalidOperationException($"{_pool.Impl}: a worker failed", failure);
        }

        long expected = rounds * _held * _workers;
        long done = _completed.Sum();
        if (done != expected)
        {
            throw new InvalidOperationException($"{_pool.Impl}: workers completed {done} of {expected} pairs");
        }

        return new RunResult(Stopwatch.GetElapsedTime(_startStamp, _endStamp), _endAllocated - _startAllocated, done, _endBarriers - _startBarriers);
    }

    /// <summary>Stops the workers; after a run that timed out they are left parked, background threads.</summary>
    public void Dispose()
    {
        if (!_broken)
        {
            Volatile.Write(ref _rounds, 0);
            if (_start.SignalAndWait(s_timeout))
            {
                foreach (Thread thread in _threads)
                {
                    thread.Join(s_timeout);
                }
            }
        }

        _start.Dispose();
        _end.Dispose();
    }

    private void Work(int worker)
    {
        var items = new BenchItem[_held];
        while (true)
        {
            _start.SignalAndWait();
            long rounds = Volatile.Read(ref _rounds);
            if (rounds == 0)
            {
                return;
            }

            long completed = 0;
            try
            {
                for (long round = 0; round < rounds; round++)
                {
                    for (int i = 0; i < items.Length; i++)
                    {
                        items[i] = _pool.Take();
                        items[i].Buffer[0] = (byte)round;
                    }

                    for (int i = 0; i < items.Length; i++)
                    {
                        _pool.Return(items[i]);
                    }

                    completed += items.Length;
                }
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
}
