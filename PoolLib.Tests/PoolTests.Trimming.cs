using System.Runtime.CompilerServices;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Trim and the idle timer: idle objects (those in per-thread caches included) are disposed down to
// MinIdle, rented ones are never touched, and the timer allocates nothing while nothing is idle.
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
        var options = new PoolOptions { MaxCapacity = 4, IdleTimeout = s_idleTimeout, TimeProvider = time };
        using var pool = new TrackedPool(options);
        using PoolMaintenance<TrackedObject> maintenance = PoolMaintenance<TrackedObject>.Create(pool, options)!;
        PoolSlot<TrackedObject> rented = pool.TakeSlot();
        pool.Release(pool.TakeSlot());
        maintenance.Sweep();

        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 100; i++)
        {
            maintenance.Sweep();
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

    /// <summary>Moves fake time on one idle-timer tick at a time, so the timer runs at each.</summary>
    private static void AdvanceInTicks(FakeTimeProvider time, TimeSpan span)
    {
        for (TimeSpan done = TimeSpan.Zero; done < span; done += s_idleTick)
        {
            time.Advance(s_idleTick);
        }
    }

    private const int TrimHeldUpObjects = 10;
    private const int TrimHeldUpMinIdle = 5;

    // A tick trims after it has stopped sweeping, so that a slow Dispose holds up no take-back; a later tick must then
    // leave the trim to it, or each would discard the excess it counted, far below MinIdle.
    [Test]
    public void IdleTimer_TrimHeldUpInADisposeWhileTheNextTickRuns_TrimsDownToMinIdleOnly()
    {
        using var gate = new ManualResetEventSlim();
        (TrackedPool pool, ManualTimeProvider time, TestThread trimmer, _) = StartTrimHeldUpInADispose(gate);
        using (pool)
        {
            time.Tick();
            gate.Set();

            Assert.That(trimmer.Join(s_waitBound), Is.True);
            AssertCounts(pool, total: TrimHeldUpMinIdle, available: TrimHeldUpMinIdle);
        }
    }

    // A Dispose that blocks holds up its own object only: later ticks trim what has been idle too long since, and the
    // object held up leaves the count of idle objects at once, so that none of them goes below MinIdle for it.
    [Test]
    public void IdleTimer_TrimHeldUpInADispose_LaterTicksStillTrimDownToMinIdle()
    {
        const int StillRented = 4;
        using var gate = new ManualResetEventSlim();
        (TrackedPool pool, ManualTimeProvider time, TestThread trimmer, PoolSlot<TrackedObject>[] rented) = StartTrimHeldUpInADispose(gate, keptRented: StillRented);
        using (pool)
        {
            try
            {
                ReleaseAll(pool, rented);
                time.Tick();
                time.Advance(TimeSpan.FromSeconds(2));
                time.Tick();

                Assert.That(pool.AvailableCount, Is.EqualTo(TrimHeldUpMinIdle), "trimmed down to MinIdle while the first trim's Dispose blocks");
            }
            finally
            {
                gate.Set();
                Assert.That(trimmer.Join(s_waitBound), Is.True);
            }

            Assert.That(pool.Created.Count(created => created.DisposeCount == 1), Is.EqualTo(TrimHeldUpObjects - TrimHeldUpMinIdle));
            Assert.That(pool.Created.Count(created => created.DisposeCount > 1), Is.Zero, "disposed twice");
            AssertCounts(pool, total: TrimHeldUpMinIdle, available: TrimHeldUpMinIdle);
        }
    }

    // The timer's trim keeps what was idle for less than the timeout (here, all but 2 objects), and the objects it is
    // disposing count no longer as idle: a Trim() meanwhile trims the rest down to MinIdle, and no further.
    [TestCase(0, 0)]
    [TestCase(TrimHeldUpObjects - 2, TrimHeldUpObjects - 2 - TrimHeldUpMinIdle)]
    public void Trim_WhileTheTimersTrimIsHeldUpInADispose_TrimsTheRestDownToMinIdle(int releasedJustNow, int expected)
    {
        using var gate = new ManualResetEventSlim();
        (TrackedPool pool, _, TestThread trimmer, _) = StartTrimHeldUpInADispose(gate, releasedJustNow);
        using (pool)
        {
            int trimmed = pool.Trim();
            gate.Set();

            Assert.That(trimmer.Join(s_waitBound), Is.True);
            Assert.That(trimmed, Is.EqualTo(expected));
            AssertCounts(pool, total: TrimHeldUpMinIdle, available: TrimHeldUpMinIdle);
        }
    }

    // A trim counts its excess as it begins, and what it claims leaves the count at once; objects released while its
    // Dispose is held up are the excess of a Trim() meanwhile, whether or not that Dispose then fails the first trim.
    [TestCase(false)]
    [TestCase(true)]
    public void Trim_WhileAnotherTrimIsHeldUpAndObjectsAreReleased_TrimsThemItself(bool itsDisposeThrows)
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = TrimHeldUpObjects, MinIdle = TrimHeldUpMinIdle });
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, TrimHeldUpObjects).Select(_ => pool.TakeSlot())];
        foreach (PoolSlot<TrackedObject> slot in slots[..(TrimHeldUpMinIdle + 1)])
        {
            pool.Release(slot);
        }

        int trimmed = TrimWhileAnotherTrimIsHeldUp(pool, slots[0].Object, itsDisposeThrows, released: slots[(TrimHeldUpMinIdle + 1)..]);

        Assert.That(trimmed, Is.EqualTo(TrimHeldUpObjects - TrimHeldUpMinIdle - 1));
        AssertCounts(pool, total: TrimHeldUpMinIdle, available: TrimHeldUpMinIdle);
    }

    // Nothing a failed trim leaves behind (such as a request to trim again) may make the idle timer's next trim dispose
    // objects idle for less than the timeout.
    [Test]
    public void IdleTimer_AfterATrimWhoseDisposeFailed_TrimsOnlyObjectsIdleTooLong()
    {
        var time = new ManualTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = TrimHeldUpObjects, MinIdle = 1, IdleTimeout = TimeSpan.FromSeconds(1), TimeProvider = time });
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, TrimHeldUpObjects).Select(_ => pool.TakeSlot())];
        foreach (PoolSlot<TrackedObject> slot in slots[..3])
        {
            pool.Release(slot);
        }

        Assert.That(TrimWhileAnotherTrimIsHeldUp(pool, slots[0].Object, itsDisposeThrows: true, released: []), Is.Zero);
        time.Tick();
        time.Advance(TimeSpan.FromSeconds(2));
        foreach (PoolSlot<TrackedObject> slot in slots[3..])
        {
            pool.Release(slot);
        }

        time.Tick();

        Assert.That(pool.AvailableCount, Is.EqualTo(TrimHeldUpObjects - 3), "only the one idle since the first tick was trimmed");
    }

    /// <summary>
    /// Runs a Trim() on another thread, held up in the Dispose of <paramref name="first"/> (which then throws if
    /// <paramref name="itsDisposeThrows"/>); meanwhile releases <paramref name="released"/> and calls Trim() here, whose
    /// result it returns.
    /// </summary>
    private static int TrimWhileAnotherTrimIsHeldUp(TrackedPool pool, TrackedObject first, bool itsDisposeThrows, PoolSlot<TrackedObject>[] released)
    {
        using var disposing = new ManualResetEventSlim();
        using var gate = new ManualResetEventSlim();
        first.OnDispose = () =>
        {
            disposing.Set();
            gate.Wait(s_waitBound);
            if (itsDisposeThrows)
            {
                throw new InvalidOperationException("dispose failed");
            }
        };
        Exception? failure = null;
        TestThread trimmer = TestThread.Start(() =>
        {
            try
            {
                pool.Trim();
            }
            catch (InvalidOperationException exception)
            {
                failure = exception;
            }
        });
        Assert.That(disposing.Wait(s_waitBound), Is.True, "the first trim began");
        foreach (PoolSlot<TrackedObject> slot in released)
        {
            pool.Release(slot);
        }

        int trimmed = pool.Trim();
        gate.Set();
        Assert.That(trimmer.Join(s_waitBound), Is.True);
        Assert.That(failure is not null, Is.EqualTo(itsDisposeThrows), "the first trim's caller got what the Dispose threw");
        return trimmed;
    }

    /// <summary>
    /// A pool of <see cref="TrimHeldUpObjects"/> objects idle past the idle timeout, but the last
    /// <paramref name="releasedJustNow"/>, whose timer trims on another thread (the one returned) and
    /// is held up in the first Dispose until <paramref name="gate"/> is set; the <paramref name="keptRented"/>
    /// objects after those are still rented, and returned.
    /// </summary>
    private static (TrackedPool Pool, ManualTimeProvider Time, TestThread Trimmer, PoolSlot<TrackedObject>[] Rented) StartTrimHeldUpInADispose(
        ManualResetEventSlim gate, int releasedJustNow = 0, int keptRented = 0)
    {
        var time = new ManualTimeProvider();
        var pool = new TrackedPool(new PoolOptions
        {
            MaxCapacity = TrimHeldUpObjects, MinIdle = TrimHeldUpMinIdle, IdleTimeout = TimeSpan.FromSeconds(1), TimeProvider = time,
        });
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, TrimHeldUpObjects).Select(_ => pool.TakeSlot())];
        using var disposing = new ManualResetEventSlim();
        int disposals = 0;
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            slot.Object.OnDispose = () =>
            {
                if (Interlocked.Increment(ref disposals) == 1)
                {
                    disposing.Set();
                    gate.Wait(s_waitBound);
                }
            };
        }

        int returned = TrimHeldUpObjects - keptRented;
        foreach (PoolSlot<TrackedObject> slot in slots[..(returned - releasedJustNow)])
        {
            pool.Release(slot);
        }

        time.Tick();
        time.Advance(TimeSpan.FromSeconds(2));
        foreach (PoolSlot<TrackedObject> slot in slots[(returned - releasedJustNow)..returned])
        {
            pool.Release(slot);
        }

        TestThread trimmer = TestThread.Start(time.Tick);
        Assert.That(disposing.Wait(s_waitBound), Is.True, "the timer began to trim");
        return (pool, time, trimmer, slots[returned..]);
    }
}
