using System.Diagnostics;
using PoolLib.Internal;

namespace PoolBench;

/// <summary>
/// Runs take+return pairs on dedicated threads that start together. A <see cref="Barrier"/> holds
/// the workers until all are ready; its post-phase actions read the clock, the process-wide
/// allocation counter and our pool library's count of process-wide memory barriers while every
/// worker is parked, so thread start-up is outside the measurement.
/// Every worker must finish all of its pairs within the timeout: a pool that loses a wake-up fails
/// the run instead of hanging it. The class is generic over the pool's struct type, so its loop is
/// compiled once for each implementation.
/// </summary>
internal sealed class RentalWorkers<TPool>(TPool pool, RentalPattern pattern, int workers, int held)
    where TPool : struct, IPoolUnderTest
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(60);

    public RunResult Run(long pairs)
    {
        long rounds = Math.Max(1, pairs / workers / held);
        long startAllocated = 0, endAllocated = 0, startStamp = 0, endStamp = 0, startBarriers = 0, endBarriers = 0;
        using var barrier = new Barrier(workers, b =>
        {
            if (b.CurrentPhaseNumber == 0)
            {
                startAllocated = GC.GetTotalAllocatedBytes(true);
                startBarriers = ForeignAccessGate.ProcessWideBarriers;
                startStamp = Stopwatch.GetTimestamp();
            }
            else
            {
                endStamp = Stopwatch.GetTimestamp();
                endBarriers = ForeignAccessGate.ProcessWideBarriers;
                endAllocated = GC.GetTotalAllocatedBytes(true);
            }
        });

        var completed = new long[workers];
        var failures = new Exception?[workers];
        var threads = new Thread[workers];
        for (int w = 0; w < workers; w++)
        {
            int worker = w;
            threads[w] = new Thread(() => Work(barrier, rounds, ref completed[worker], ref failures[worker])) { IsBackground = true };
            threads[w].Start();
        }

        long deadline = Stopwatch.GetTimestamp() + (long)(s_timeout.TotalSeconds * Stopwatch.Frequency);
        foreach (Thread thread in threads)
        {
            TimeSpan left = TimeSpan.FromSeconds(Math.Max(0, deadline - Stopwatch.GetTimestamp()) / (double)Stopwatch.Frequency);
            if (!thread.Join(left))
            {
                throw new TimeoutException($"{pool.Impl}: a worker did not finish its {pattern} rentals within {s_timeout.TotalSeconds} s");
            }
        }

        if (failures.FirstOrDefault(f => f is not null) is Exception failure)
        {
            throw new InvalidOperationException($"{pool.Impl}: a worker failed", failure);
        }

        long expected = rounds * held * workers;
        long done = completed.Sum();
        if (done != expected)
        {
            throw new InvalidOperationException($"{pool.Impl}: workers completed {done} of {expected} pairs");
        }

        return new RunResult(Stopwatch.GetElapsedTime(startStamp, endStamp), endAllocated - startAllocated, done, endBarriers - startBarriers);
    }

    private void Work(Barrier barrier, long rounds, ref long completed, ref Exception? failure)
    {
        var items = new BenchItem[held];
        barrier.SignalAndWait();
        try
        {
            for (long round = 0; round < rounds; round++)
            {
                for (int i = 0; i < items.Length; i++)
                {
                    items[i] = pool.Take();
                    items[i].Buffer[0] = (byte)round;
                }

                for (int i = 0; i < items.Length; i++)
                {
                    pool.Return(items[i]);
                }

                completed += items.Length;
            }
        }
        catch (Exception e)
        {
            failure = e;
        }
        finally
        {
            barrier.SignalAndWait();
        }
    }
}
