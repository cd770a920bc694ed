using System.Runtime.CompilerServices;
using System.Collections.Concurrent;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Trim, Clear and the idle timer: idle objects (those in per-thread caches included) are disposed
// down to MinIdle, rented ones are never touched, and the timer allocates nothing while nothing is idle.
public sealed partial class PoolTests
{
    private static readonly TimeSpan s_idleTimeout = TimeSpan.FromMinutes(1);

    // The idle timer ticks every quarter of the idle timeout.
    private static readonly TimeSpan s_idleTick = s_idleTimeout / 4;

    [Test]
    public void Trim_IdleObjects_DisposesDownToMinIdleAndSaysHowMany()
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 8, MinIdle = 2 });
        pool.Prewarm(5);
        PoolSlot<TrackedObject> rented = pool.TakeSlot();

        int trimmed = pool.Trim();

        Assert.That(trimmed, Is.EqualTo(2));
        Assert.That(pool.Created.Count(created => created.DisposeCount == 1), Is.EqualTo(2));
        Assert.That(rented.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 3, available: 2);
    }

    [Test]
    public void Trim_ObjectsKeptInAnotherThreadsCache_CountsThemAsIdle()
    {
        using var pool = new TrackedPool(4);
        OnOwnThread(() => ReleaseAll(pool, pool.TakeSlot(), pool.TakeSlot(), pool.TakeSlot()));

        int trimmed = pool.Trim();

        Assert.That(trimmed, Is.EqualTo(3));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Trim_AtMinIdle_DisposesNothing()
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 4, MinIdle = 2 });
        pool.Prewarm(2);

        Assert.That(pool.Trim(), Is.Zero);
        AssertCounts(pool, total: 2, available: 2);
    }

    [Test]
    public void Trim_KeepsTheMostRecentlyReturned()
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 4, MinIdle = 1 });
        PoolSlot<TrackedObject> older = pool.TakeSlot();
        PoolSlot<TrackedObject> newer = pool.TakeSlot();
        pool.Release(older);
        pool.Release(newer);

        pool.Trim();

        Assert.That(newer.Object.DisposeCount, Is.Zero);
        Assert.That(older.Object.DisposeCount, Is.EqualTo(1));
    }

    [Test]
    public void Trim_ObjectThrowsFromDispose_DisposesTheRestAndThrows()
    {
        using var pool = new TrackedPool(4);
        pool.Prewarm(3);
        pool.Created.First().DisposeFailure = new InvalidOperationException("broken");

        Assert.Throws<InvalidOperationException>(() => pool.Trim());

        Assert.That(pool.Created.Select(created => created.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Trim_AfterDispose_Throws()
    {
        var pool = new TrackedPool(1);
        pool.Dispose();

        Assert.Throws<ObjectDisposedException>(() => pool.Trim());
        Assert.Throws<ObjectDisposedException>(pool.Clear);
    }

    [Test]
    public void Clear_DisposesIdleNowAndRentedWhenReleased()
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 4, MinIdle = 2 });
        pool.Prewarm(2);
        PoolSlot<TrackedObject> rented = pool.TakeSlot();
        PoolSlot<TrackedObject> idle = pool.TakeSlot();
        pool.Release(idle);

        pool.Clear();

        Assert.That(idle.Object.DisposeCount, Is.EqualTo(1), "idle objects go at once, MinIdle or not");
        Assert.That(rented.Object.DisposeCount, Is.Zero, "rented objects stay usable");
        pool.Release(rented);
        Assert.That(rented.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Clear_ObjectsMadeAfterwards_AreStoredAsUsual()
    {
        using var pool = new TrackedPool(2);
        pool.Prewarm(1);
        pool.Clear();

        PoolSlot<TrackedObject> fresh = pool.TakeSlot();
        pool.Release(fresh);

        Assert.That(fresh.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void IdleTimer_ObjectsIdleLongerThanTheTimeout_TrimmedDownToMinIdle()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 4, MinIdle = 1, IdleTimeout = s_idleTimeout, TimeProvider = time });
        ReleaseAll(pool, pool.TakeSlot(), pool.TakeSlot(), pool.TakeSlot());

        AdvanceInTicks(time, s_idleTimeout);
        Assert.That(pool.AvailableCount, Is.EqualTo(3), "not trimmed before the idle timeout");

        AdvanceInTicks(time, s_idleTick);
        AssertCounts(pool, total: 1, available: 1);
        Assert.That(pool.Created.Count(created => created.DisposeCount == 1), Is.EqualTo(2));
    }

    [Test]
    public void IdleTimer_ObjectUsedMeanwhile_IsNotTrimmed()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 4, IdleTimeout = s_idleTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        PoolSlot<TrackedObject> second = pool.TakeSlot();
        ReleaseAll(pool, second, first);

        AdvanceInTicks(time, s_idleTimeout - s_idleTick);
        PoolSlot<TrackedObject> used = pool.TakeSlot();
        pool.Release(used);
        AdvanceInTicks(time, 2 * s_idleTick);

        PoolSlot<TrackedObject> unused = ReferenceEquals(used, first) ? second : first;
        Assert.That(unused.Object.DisposeCount, Is.EqualTo(1));
        Assert.That(used.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void IdleTimer_RentedObjects_AreNeverTrimmed()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, IdleTimeout = s_idleTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> rented = pool.TakeSlot();

        AdvanceInTicks(time, 3 * s_idleTimeout);

        Assert.That(rented.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void IdleTimer_NothingIdleOrNothingExpired_AllocatesNothing()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 4, IdleTimeout = s_idleTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> rented = pool.TakeSlot();
        pool.Release(pool.TakeSlot());
        pool.RunMaintenance();

        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 100; i++)
        {
            pool.RunMaintenance();
        }

        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.That(allocated, Is.Zero);
        pool.Release(rented);
    }

    [Test]
    public void IdleTimer_PoolDisposed_StopsAndLeavesNothing()
    {
        var time = new FakeTimeProvider();
        var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, IdleTimeout = s_idleTimeout, TimeProvider = time });
        pool.Release(pool.TakeSlot());

        pool.Dispose();
        AdvanceInTicks(time, 2 * s_idleTimeout);

        Assert.That(pool.Created.Single().DisposeCount, Is.EqualTo(1));
    }

    // Workers take, release and discard while a controller trims, clears and runs the idle timer and
    // leak scan (fake time, advanced by the controller); then the same race meets Dispose. No object
    // may be held twice, lost, or disposed twice, and at the end the counts must add up exactly.
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
        Assert.That(pool.Storage.CountIdle(), Is.EqualTo(pool.TotalCount), "and stored exactly once");
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

    [Test]
    public void IdleTimer_PoolCollectedWithoutDispose_StopsItself()
    {
        var time = new TimerRecordingTimeProvider();
        StartPoolAndForgetIt(time);
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();

        time.Advance(s_idleTick);

        Assert.That(time.Timers, Has.Count.EqualTo(1));
        Assert.That(time.Timers[0].IsDisposed, Is.True, "the timer of a collected pool stops on its next tick");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void StartPoolAndForgetIt(TimeProvider time) =>
        _ = new TrackedPool(new PoolOptions { MaxCapacity = 1, IdleTimeout = s_idleTimeout, TimeProvider = time });

    /// <summary>Takes through TakeSlotAsync and waits for it at most <see cref="s_waitBound"/>; null if it did not finish.</summary>
    private static PoolSlot<TrackedObject>? TakeAsyncWithinBound(TrackedPool pool, CancellationToken cancellationToken)
    {
        Task<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken).AsTask();

        // GetResult, not Wait or Result: a disposed pool's ObjectDisposedException must arrive as itself.
        return Task.WhenAny(take, Task.Delay(s_waitBound, cancellationToken)).GetAwaiter().GetResult() == take
            ? take.GetAwaiter().GetResult()
            : null;
    }

    /// <summary>Moves fake time on one idle-timer tick at a time, so the timer runs at each.</summary>
    private static void AdvanceInTicks(FakeTimeProvider time, TimeSpan span)
    {
        for (TimeSpan done = TimeSpan.Zero; done < span; done += s_idleTick)
        {
            time.Advance(s_idleTick);
        }
    }

    [Test]
    [CancelAfter(10_000)]
    public void Clear_WhileTrimHasTheIdleObjectsOut_NoObjectFromBeforeItIsHandedOutAfterwards(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 8, MinIdle = 4 });
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 8).Select(_ => pool.TakeSlot())];
        using var trimming = new ManualResetEventSlim();
        using var resume = new ManualResetEventSlim();
        int disposals = 0;
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            slot.Object.OnDispose = () =>
            {
                if (Interlocked.Increment(ref disposals) == 1)
                {
                    trimming.Set();
                    resume.Wait(cancellationToken);
                }
            };
            pool.Release(slot);
        }

        // Trim stops in the Dispose of the first object it trims.
        var trim = Task.Factory.StartNew(pool.Trim, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        trimming.Wait(cancellationToken);
        pool.Clear();
        resume.Set();
        Assert.That(trim.Wait(TimeSpan.FromSeconds(5)), Is.True);
        TrackedObject[] takenAfter = [.. Enumerable.Range(0, 8).Select(_ => pool.TakeSlot().Object)];

        Assert.That(takenAfter, Has.None.AnyOf(slots.Select(slot => slot.Object).ToArray()), "objects idle before Clear were handed out after it");
        Assert.That(slots.Select(slot => slot.Object.DisposeCount), Is.All.EqualTo(1), "every object from before Clear is disposed once");
        AssertCounts(pool, total: 8, available: 0);
    }

    [Test]
    public void TryAllocatePush_ClearWhileTheObjectIsHandedItsSlot_DisposesItAndGivesItsPlaceBack()
    {
        using var pool = new TrackedPool(2);
        pool.OnHoldSlot = _ => pool.Clear();

        pool.PrewarmOne();
        pool.OnHoldSlot = null;

        Assert.That(pool.Created.Single().DisposeCount, Is.EqualTo(1), "made before the Clear returned, so retired by it");
        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.TryTakeSlot(out _) && pool.TryTakeSlot(out _), Is.True, "both places under the cap are free");
    }

    [Test]
    public void TryAllocatePush_ClearWhileTheObjectIsMade_DisposesIt()
    {
        using var pool = new TrackedPool(1);
        pool.BeforeConstruct = () => pool.Clear();

        pool.PrewarmOne();
        pool.BeforeConstruct = null;

        Assert.That(pool.Created.Single().DisposeCount, Is.EqualTo(1), "a Clear that ran while it was made could not see it, so it goes as if seen");
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TryAllocatePush_LifetimeSweepWhileTheObjectIsHandedItsSlot_DisposesItAndGivesItsPlaceBack()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, MaxObjectLifetime = TimeSpan.FromSeconds(1), TimeProvider = time });
        pool.OnHoldSlot = _ =>
        {
            time.Advance(TimeSpan.FromSeconds(2));
            pool.RunMaintenance();
        };

        pool.PrewarmOne();
        pool.OnHoldSlot = null;

        Assert.That(pool.Created.Single().DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.TryTakeSlot(out _), Is.True, "the place under the cap is free");
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
}
