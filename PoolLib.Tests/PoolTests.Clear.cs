using System.Collections.Concurrent;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Clear: every idle object is disposed now and every rented one when it comes back, so that no object
// made before the Clear is handed out after it, whatever Trim, the idle sweep or a take in progress does.
public sealed partial class PoolTests
{
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

    // An object whose making began before a Clear began is never stored again, however the Clear's walk
    // and the object's registration interleave: the walk sees it, or the registration retires it.
    [Test]
    [CancelAfter(60_000)]
    public void Clear_WhileOtherThreadsMakeObjects_EveryObjectBegunBeforeItIsDisposedOnRelease(CancellationToken cancellationToken)
    {
        const int Makers = 2, PerMaker = 20_000;
        using var pool = new TrackedPool(Makers * PerMaker);
        int clearsBegun = 0;
        var begunAfter = new ConcurrentDictionary<TrackedObject, int>();
        using var making = new ThreadLocal<int>();
        pool.BeforeConstruct = () =>
        {
            making.Value = Volatile.Read(ref clearsBegun);
            Thread.SpinWait(500); // a slow constructor: a Clear more often begins and walks meanwhile
        };
        pool.OnHoldSlot = @object => begunAfter[@object] = making.Value;
        using var start = new Barrier(Makers + 1);
        Task<PoolSlot<TrackedObject>[]>[] makers = [.. Enumerable.Range(0, Makers).Select(_ => Task.Factory.StartNew(() =>
        {
            start.SignalAndWait(cancellationToken);
            return Enumerable.Range(0, PerMaker).Select(_ => pool.TakeSlot()).ToArray();
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];

        start.SignalAndWait(cancellationToken);
        while (!makers.All(maker => maker.IsCompleted))
        {
            Interlocked.Increment(ref clearsBegun);
            pool.Clear();
        }

        PoolSlot<TrackedObject>[] slots = [.. makers.SelectMany(maker => maker.Result)];
        int clears = clearsBegun;
        slots.ToList().ForEach(pool.Release);

        TrackedObject[] stored = [.. slots.Select(slot => slot.Object).Where(@object => begunAfter[@object] < clears && @object.DisposeCount == 0)];
        Assert.That(clears, Is.GreaterThan(0));
        Assert.That(stored, Is.Empty, "objects begun before a Clear began were stored after it");
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
            // The lifetime sweep runs as the fake clock passes its ticks.
            time.Advance(TimeSpan.FromSeconds(2));
        };

        pool.PrewarmOne();
        pool.OnHoldSlot = null;

        Assert.That(pool.Created.Single().DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.TryTakeSlot(out _), Is.True, "the place under the cap is free");
    }
}
