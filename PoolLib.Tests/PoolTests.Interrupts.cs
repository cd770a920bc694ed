using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// A contended lock throws ThreadInterruptedException on a thread with an interrupt pending. Each
// lock of the pool is held here while a thread with an interrupt pending runs into it: the pool must
// finish what it started (nothing lost, the cap intact) and leave the interrupt for the thread's next wait.
public sealed partial class PoolTests
{




    // Workers take and release while a controller interrupts them at random: an interrupt may land in
    // a wait, a spin, a contended lock, or in no blocking call at all (and then meets the next one).
    // A clean-up fails now and then, so objects are discarded and made again under the registry's
    // lock. Only a take may end with the interrupt; a release never does. At the end every object is
    // idle, stored once, and the whole cap can be taken at once.
    [Test]
    [CancelAfter(120_000)]
    public void TakeAndRelease_InterruptedAtRandom_LosesNoObjectAndNoCapacity(CancellationToken cancellationToken)
    {
        const int Capacity = 4;
        const int Workers = 6;
        const int PairsPerWorker = 100_000;
        using var pool = new TrackedPool(Capacity);
        pool.OnCleanUp = o =>
        {
            if (o.Id % 7 == 0 && Random.Shared.Next(64) == 0)
            {
                throw new FormatException("clean-up failed");
            }
        };
        var violations = new ConcurrentQueue<string>();
        int interruptedTakes = 0;
        int workersStarted = 0;
        int workersLeft = Workers;
        using var start = new Barrier(Workers + 1);

        void Work(int holder)
        {
            start.SignalAndWait(cancellationToken);
            Interlocked.Increment(ref workersStarted);
            for (int pair = 0; pair < PairsPerWorker; pair++)
            {
                PoolSlot<TrackedObject>? slot;
                try
                {
                    if (pair % 2 == 0)
                    {
                        slot = pool.TakeSlot();
                    }
                    else if (!pool.TryTakeSlot(TimeSpan.FromMilliseconds(50), out slot))
                    {
                        continue;
                    }
                }
                catch (ThreadInterruptedException)
                {
                    Interlocked.Increment(ref interruptedTakes);
                    continue;
                }

                // Held a moment, so that the other workers find the pool exhausted and wait.
                bool stamped = slot.Object.TryStampHolder(holder);
                Thread.SpinWait(20);
                if (!stamped || !slot.Object.TryClearHolder(holder))
                {
                    violations.Enqueue($"object {slot.Object.Id} held by two takers");
                }

                try
                {
                    pool.Release(slot);
                }
                catch (FormatException)
                {
                }
                catch (Exception e)
                {
                    violations.Enqueue($"a release threw {e.GetType().Name}: {e.Message}");
                }
            }
        }

        // A worker that throws counts as done, so that the controller stops and its join reports what it threw.
        TestThread[] workers = [.. Enumerable.Range(1, Workers).Select(holder => TestThread.Start(() =>
        {
            try
            {
                Work(holder);
            }
            finally
            {
                Interlocked.Decrement(ref workersLeft);
            }
        }))];

        // The controller runs on the test thread; it yields after each interrupt so workers run on one
        // core too. It starts once every worker is past the start barrier, whose wait is not the pool's.
        start.SignalAndWait(cancellationToken);
        Assert.That(SpinWait.SpinUntil(() => Volatile.Read(ref workersStarted) == Workers, s_waitBound), Is.True, "the workers never started");
        int interrupts = 0;
        while (Volatile.Read(ref workersLeft) > 0)
        {
            cancellationToken.ThrowIfCancellationRequested();
            workers[Random.Shared.Next(Workers)].Thread.Interrupt();
            interrupts++;
            Thread.SpinWait(Random.Shared.Next(1, 2_000));
            Thread.Yield();
        }

        foreach (TestThread worker in workers)
        {
            Assert.That(worker.Join(s_waitBound), Is.True, "a worker never finished");
        }

        Assert.That(violations, Is.Empty);
        Assert.That(interrupts, Is.GreaterThan(0));
        Assert.That(interruptedTakes, Is.GreaterThan(0), "some interrupts ended a take");
        Assert.That(pool.WaiterCount, Is.Zero);
        AssertCounts(pool, total: pool.TotalCount, available: pool.TotalCount);
        pool.OnCleanUp = null;
        var all = new List<PoolSlot<TrackedObject>>();
        for (int i = 0; i < Capacity; i++)
        {
            Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot), Is.True, $"take {i + 1} of the cap of {Capacity}");
            all.Add(slot!);
        }

        Assert.That(all.Select(s => s.Object).Distinct().Count(), Is.EqualTo(Capacity));
    }
}
