using System.Collections.Concurrent;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Stress: takes, releases and discards racing Trim, Clear, the idle timer, pre-warming and Dispose.
// Each test is long because it runs workers and a controller and then checks every count exactly.
public sealed partial class PoolTests
{
    // Workers take, release and discard while a controller trims, clears and runs the idle timer and
    // leak scan (fake time, advanced by the controller); then the same race meets Dispose. No object
    // may be held twice, lost, or disposed twice, and at the end the counts must add up exactly.
    // Trim and Clear claim an idle slot before they discard it; a second release of its handle landing then must throw
    // and change nothing, as against any other claim: it once went through, published over the discard, and the next
    // take got the disposed object.
    [TestCase("trim")]
    [TestCase("clear")]
    [CancelAfter(120_000)]
    public void Release_SecondReleaseRacingTrimOrClear_ThrowsAndNoDisposedObjectIsHandedOut(string walk, CancellationToken cancellationToken)
    {
        const int Rounds = 100_000;
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName() });
        using var stop = new CancellationTokenSource();
        TestThread walker = TestThread.Start(() =>
        {
            while (!stop.IsCancellationRequested)
            {
                if (walk == "trim")
                {
                    pool.Trim();
                }
                else
                {
                    pool.Clear();
                }
            }
        });
        int accepted = 0;
        int disposedHandedOut = 0;
        try
        {
            for (int i = 0; i < Rounds && !cancellationToken.IsCancellationRequested; i++)
            {
                Assert.That(pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? slot), Is.True, "the cap was lost");
                disposedHandedOut += slot!.Object.DisposeCount != 0 ? 1 : 0;
                pool.Release(slot);
                try
                {
                    pool.Release(slot);
                    accepted++;
                }
                catch (InvalidOperationException)
                {
                }
            }
        }
        finally
        {
            stop.Cancel();
            Assert.That(walker.Join(s_waitBound), Is.True, "the walker never finished");
        }

        Assert.That(accepted, Is.Zero, "second releases that went through");
        Assert.That(disposedHandedOut, Is.Zero, "disposed objects handed out");
        Assert.That(pool.PeakLiveCount, Is.LessThanOrEqualTo(1), "the cap");
    }

    [TestCase(2)]
    [TestCase(8)]
    [CancelAfter(120_000)]
    public void TrimClearDiscardAndIdleTimer_RacingTakesReleasesAndDispose_LoseNothingAndDisposeOnce(int maxCapacity, CancellationToken cancellationToken)
    {
        const int Workers = 4;
        const int PairsPerWorker = 20_000;
        var time = new FakeTimeProvider();
        var pool = new ValidatingPool(new PoolOptions
        {
            MaxCapacity = maxCapacity,
            IdleTimeout = TimeSpan.FromMilliseconds(1),
            MaxObjectLifetime = TimeSpan.FromMilliseconds(50),
            LeakDetectionThreshold = TimeSpan.FromMilliseconds(2),
            TimeProvider = time,
        })
        {
            OnValidate = candidate => candidate.Id % 13 != 0,
        };
        var violations = new ConcurrentQueue<string>();
        pool.RentalLeakSuspected += (sender, args) =>
        {
            if (args.HeldFor < TimeSpan.FromMilliseconds(2))
            {
                violations.Enqueue($"a rental held {args.HeldFor} reported as a leak");
            }
        };

        void Work(int holder, int pairs, CountdownEvent? warm)
        {
            bool signalled = false;
            try
            {
                WorkUntilDisposed(holder, pairs, onWarm: () =>
                {
                    warm?.Signal();
                    signalled = true;
                });
            }
            finally
            {
                // A worker that stops early still counts as warm, so Dispose is never waited for in vain.
                if (warm is not null && !signalled)
                {
                    warm.Signal();
                }
            }
        }

        void WorkUntilDisposed(int holder, int pairs, Action onWarm)
        {
            var held = new List<PoolSlot<TrackedObject>>();
            for (int i = 0; i < pairs; i++)
            {
                PoolSlot<TrackedObject>? taken;
                try
                {
                    taken = i % 2 == 0
                        ? (pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? timed) ? timed : null)
                        : TakeAsyncWithinBound(pool, cancellationToken);
                }
                catch (ObjectDisposedException)
                {
                    return;
                }

                if (taken is null)
                {
                    violations.Enqueue($"a take by {holder} waited out its bound: capacity was lost");
                    return;
                }

                // Now and then a second object, never waited for (two holders waiting for a second
                // would deadlock): it then idles in this thread's cache for the idle timer to find.
                held.Clear();
                held.Add(taken);
                try
                {
                    if (i % 10 == 0 && pool.TryTakeSlot(out PoolSlot<TrackedObject>? second))
                    {
                        held.Add(second);
                    }
                }
                catch (ObjectDisposedException)
                {
                    // Released below, into the disposed pool.
                }

                foreach (PoolSlot<TrackedObject> slot in held)
                {
                    if (!slot.Object.TryStampHolder(holder))
                    {
                        violations.Enqueue($"object {slot.Object.Id} handed to {holder} while held by another");
                    }
                    else if (!slot.Object.TryClearHolder(holder))
                    {
                        violations.Enqueue($"object {slot.Object.Id} changed holder while {holder} held it");
                    }

                    if (i % 97 == 0)
                    {
                        slot.Discard();
                    }
                    else
                    {
                        pool.Release(slot);
                    }
                }

                if (i == 1_000)
                {
                    onWarm();
                }
            }
        }

        void Maintain(int round)
        {
            if (round % 64 == 0)
            {
                pool.Trim();
            }

            if (round % 256 == 0)
            {
                pool.Clear();
            }

            time.Advance(TimeSpan.FromMilliseconds(2));
        }

        // Phase 1: the race without Dispose.
        Task[] workers = [.. Enumerable.Range(1, Workers).Select(holder => Task.Factory.StartNew(
            () => Work(holder, PairsPerWorker, warm: null), cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];
        for (int round = 0; !Task.WhenAll(workers).IsCompleted; round++)
        {
            Maintain(round);
        }

        Task.WaitAll(workers, cancellationToken);
        Assert.That(violations, Is.Empty);
        Assert.That(pool.Created.Select(created => created.DisposeCount), Is.All.LessThanOrEqualTo(1));
        Assert.That(pool.Created.Count(created => created.DisposeCount == 0), Is.EqualTo(pool.TotalCount), "every object not disposed is still the pool's");
        Assert.That(IdleSlotCount(pool), Is.EqualTo(pool.TotalCount), "and stored exactly once");
        Assert.That(pool.PeakLiveCount, Is.LessThanOrEqualTo(maxCapacity), "never more objects alive at once than the cap");
        Assert.That(pool.Created.Count, Is.GreaterThan(maxCapacity), "the race discarded and made objects");

        // Phase 2: the same race, and Dispose once every worker is warm.
        using var warm = new CountdownEvent(Workers);
        workers = [.. Enumerable.Range(1, Workers).Select(holder => Task.Factory.StartNew(
            () => Work(holder, int.MaxValue, warm), cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];
        for (int round = 0; !warm.IsSet; round++)
        {
            Maintain(round);
        }

        pool.Dispose();
        Task.WaitAll(workers, cancellationToken);
        time.Advance(TimeSpan.FromSeconds(1));

        Assert.That(violations, Is.Empty);
        Assert.That(pool.Created.Select(created => created.DisposeCount), Is.All.EqualTo(1), "every object disposed exactly once");
        AssertCounts(pool, total: 0, available: 0);
    }

    // Pre-warming, Clear and Trim race takers that hold each object a moment: no object is held twice
    // or lost, and at the end every live object is idle, the pool's, and counted once.
    [TestCase(2)]
    [TestCase(4)]
    [CancelAfter(120_000)]
    public void TryAllocatePushClearAndTrim_RacingTakesAndReleases_LoseNothing(int maxCapacity, CancellationToken cancellationToken)
    {
        const int Workers = 3;
        const int PairsPerWorker = 20_000;
        var pool = new TrackedPool(maxCapacity);
        var violations = new ConcurrentQueue<string>();
        Task[] workers = StartWorkers(Workers, worker =>
        {
            int holder = worker + 1;
            for (int i = 0; i < PairsPerWorker && violations.IsEmpty; i++)
            {
                if (!pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? slot))
                {
                    violations.Enqueue("a bounded take waited out its bound: capacity or a wake-up was lost");
                    return;
                }

                if (!slot.Object.TryStampHolder(holder) || !slot.Object.TryClearHolder(holder))
                {
                    violations.Enqueue($"object {slot.Object.Id} held by two takers at once");
                }

                pool.Release(slot);
            }
        });

        for (int round = 0; !Task.WhenAll(workers).IsCompleted; round++)
        {
            pool.PrewarmOne();
            if (round % 3 == 0)
            {
                pool.Clear();
            }

            if (round % 7 == 0)
            {
                pool.Trim();
            }
        }

        Assert.That(Task.WaitAll(workers, s_waitBound), Is.True);
        Assert.That(violations, Is.Empty);
        Assert.That(pool.Created.Select(created => created.DisposeCount), Is.All.LessThanOrEqualTo(1));
        Assert.That(pool.Created.Count(created => created.DisposeCount == 0), Is.EqualTo(pool.TotalCount), "every object not disposed is still the pool's");
        AssertCounts(pool, total: pool.TotalCount, available: pool.TotalCount);
        pool.Dispose();
        Assert.That(pool.Created.Select(created => created.DisposeCount), Is.All.EqualTo(1), "and disposed once with the pool");
    }

    /// <summary>Takes through TakeSlotAsync and waits for it at most <see cref="s_waitBound"/>; null if it did not finish.</summary>
    private static PoolSlot<TrackedObject>? TakeAsyncWithinBound(TrackedPool pool, CancellationToken cancellationToken)
    {
        Task<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken).AsTask();

        // GetResult, not Wait or Result: a disposed pool's ObjectDisposedException must arrive as itself.
        return Task.WhenAny(take, Task.Delay(s_waitBound, cancellationToken)).GetAwaiter().GetResult() == take
            ? take.GetAwaiter().GetResult()
            : null;
    }
}
