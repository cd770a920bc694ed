using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// A take leaves a hint of its object in the taking thread's own cache, to find it there once it is
// back. These tests prove that an object hinted so is still the pool's: other threads reuse it,
// waiters get it, Dispose disposes it.
public sealed partial class PoolTests
{
    [Test]
    public void TakeSlot_ObjectKeptByAnotherThread_ReusesItWithoutCreating()
    {
        using var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> released = OnOwnThread(() =>
        {
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            pool.Release(slot);
            return slot;
        });

        PoolSlot<TrackedObject> taken = pool.TakeSlot();

        Assert.That(taken, Is.SameAs(released));
        Assert.That(pool.CreatedCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 0);
    }

    // Pre-warmed objects are kept by no thread: every taker finds them in the registry.
    [Test]
    public void TryAllocatePush_ThenTakesOnAnotherThread_TakesEveryObjectWithoutCreating()
    {
        const int Objects = 8;
        using var pool = new TrackedPool(Objects);
        pool.Prewarm(Objects);

        PoolSlot<TrackedObject>[] taken = OnOwnThread(() => Enumerable.Range(0, Objects).Select(_ => pool.TakeSlot()).ToArray());

        Assert.That(taken.Select(s => s.Object), Is.EquivalentTo(pool.Created));
        Assert.That(pool.CreatedCount, Is.EqualTo(Objects));
        AssertCounts(pool, total: Objects, available: 0);
    }

    [Test]
    public void TakeSlot_ObjectsKeptByAThreadThatEnded_AllTakenWithoutCreating()
    {
        const int Objects = 40;
        using var pool = new TrackedPool(Objects);
        PoolSlot<TrackedObject>[] kept = OnOwnThread(() =>
        {
            PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, Objects).Select(_ => pool.TakeSlot())];
            ReleaseAll(pool, slots);
            return slots;
        });

        PoolSlot<TrackedObject>[] taken = [.. Enumerable.Range(0, Objects).Select(_ => pool.TakeSlot())];

        Assert.That(taken, Is.EquivalentTo(kept));
        Assert.That(pool.CreatedCount, Is.EqualTo(Objects));
    }

    [Test]
    public void TryTakeSlot_ExhaustedButObjectKeptByAnotherThread_TakesIt()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> released = OnOwnThread(() =>
        {
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            slot.Dispose();
            return slot;
        });

        bool taken = pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot);

        Assert.That(taken, Is.True);
        Assert.That(slot, Is.SameAs(released));
        AssertCounts(pool, total: 1, available: 0);
    }

    // The thread's cache grows to hold a hint for every object; the cap equals the number taken, so a
    // lost object would make a take fail.
    [Test]
    public void TryTakeSlot_OneThreadTakingEverythingThenReleasingIt_ReusesEachObjectOnce()
    {
        const int Objects = 80;
        using var pool = new TrackedPool(Objects);
        var distinctPerRound = new List<int>();
        for (int round = 0; round < 3; round++)
        {
            var held = new List<PoolSlot<TrackedObject>>();
            while (held.Count < Objects && pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot))
            {
                held.Add(slot);
            }

            distinctPerRound.Add(held.Select(s => s.Object).Distinct().Count());
            ReleaseAll(pool, [.. held]);
        }

        Assert.That(distinctPerRound, Is.All.EqualTo(Objects), "every round took every object, none twice");
        Assert.That(pool.CreatedCount, Is.EqualTo(Objects), "later rounds reused the first round's objects");
        AssertCounts(pool, total: Objects, available: Objects);
    }

    [Test]
    public void AvailableCount_ObjectsKeptByOtherThreads_CountsThem()
    {
        using var pool = new TrackedPool(4);
        OnOwnThread(() => ReleaseAll(pool, pool.TakeSlot(), pool.TakeSlot()));
        OnOwnThread(() => ReleaseAll(pool, pool.TakeSlot()));

        Assert.That(pool.CreatedCount, Is.EqualTo(2), "the second thread reused one of the first thread's objects");
        AssertCounts(pool, total: 2, available: 2);
    }

    [Test]
    public void Dispose_ObjectsKeptByOtherThreads_DisposesEachOnce()
    {
        var pool = new TrackedPool(10);
        OnOwnThread(() => ReleaseAll(pool, [.. Enumerable.Range(0, 10).Select(_ => pool.TakeSlot())]));

        pool.Dispose();

        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task TakeSlotAsync_WaitingWhileOwnerThreadKeepsReleasing_IsHandedTheObject(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        Assert.That(waiting.IsCompleted, Is.False);

        // The holder's thread releases; with a waiter queued it must hand over, not keep the object.
        OnOwnThread(() => ReleaseAll(pool, held));
        PoolSlot<TrackedObject> handed = await waiting;

        Assert.That(handed, Is.SameAs(held));
        Assert.That(pool.WaiterCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TakeSlot_InterruptedWhileWaiting_LeavesNoWaiter()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        Exception? thrown = null;
        var taker = new Thread(() =>
        {
            try
            {
                pool.TakeSlot();
            }
            catch (Exception e)
            {
                thrown = e;
            }
        });
        taker.Start();
        WaitUntilWaiting(pool, 1);

        taker.Interrupt();
        Assert.That(taker.Join(s_waitBound), Is.True, "the interrupted taker never returned");
        pool.Release(held);

        Assert.That(thrown, Is.InstanceOf<ThreadInterruptedException>());
        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot), Is.True, "the released object went back to the pool, not to the gone taker");
        Assert.That(slot, Is.SameAs(held));
        AssertCounts(pool, total: 1, available: 0);
    }


    /// <summary>Runs <paramref name="body"/> on a thread of its own, which ends before this returns.</summary>
    private static TResult OnOwnThread<TResult>(Func<TResult> body)
    {
        TResult result = default!;
        TestThread thread = TestThread.Start(() => result = body());
        Assert.That(thread.Join(s_waitBound), Is.True, "the body never finished");
        return result;
    }

    private static int ReleaseAll(TrackedPool pool, params PoolSlot<TrackedObject>[] slots)
    {
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            pool.Release(slot);
        }

        return slots.Length;
    }
}
