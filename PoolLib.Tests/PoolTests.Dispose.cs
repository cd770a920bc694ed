using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed partial class PoolTests
{
    [Test]
    public void Dispose_IdleObjects_DisposesEachOnceAndEmptiesThePool()
    {
        var pool = new TrackedPool(4);
        pool.Prewarm(3);

        pool.Dispose();

        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Dispose_OneIdleObjectThrowsFromDispose_DisposesEveryOtherOnceAndRethrowsIt()
    {
        var pool = new TrackedPool(5);
        pool.Prewarm(5);
        var failure = new FormatException("dispose failed");
        pool.Created.ElementAt(2).DisposeFailure = failure;

        Exception? thrown = Assert.Catch(pool.Dispose);

        Assert.That(thrown, Is.SameAs(failure));
        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Dispose_SeveralIdleObjectsThrowFromDispose_DisposesEachOnceAndThrowsThemTogether()
    {
        var pool = new TrackedPool(5);
        pool.Prewarm(5);
        Exception[] failures = [new FormatException("first"), new FormatException("second")];
        pool.Created.ElementAt(0).DisposeFailure = failures[0];
        pool.Created.ElementAt(4).DisposeFailure = failures[1];

        var thrown = Assert.Throws<AggregateException>(pool.Dispose);

        Assert.That(thrown.InnerExceptions, Is.EquivalentTo(failures));
        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
        Assert.DoesNotThrow(pool.Dispose, "a second Dispose does nothing");
    }

    [Test]
    public void Release_AfterDisposeObjectThrowsFromDispose_GivesCapacityBackAndPropagates()
    {
        var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.Dispose();
        slot.Object.DisposeFailure = new FormatException("dispose failed");

        Assert.Throws<FormatException>(() => pool.Release(slot));

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
        Assert.Throws<InvalidOperationException>(() => pool.Release(slot), "a discarded slot cannot come back");
    }

    [Test]
    public void Dispose_Twice_DoesNothingMore()
    {
        var pool = new TrackedPool(2);
        pool.Prewarm(2);
        pool.Dispose();

        pool.Dispose();

        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1));
    }

    [Test]
    public void TakeSlot_AfterDispose_Throws()
    {
        var pool = DisposedPool();

        Assert.Throws<ObjectDisposedException>(() => pool.TakeSlot());

        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TryTakeSlot_AfterDispose_Throws()
    {
        var pool = DisposedPool();

        Assert.Throws<ObjectDisposedException>(() => pool.TryTakeSlot(out _));

        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TryTakeSlotWithTimeout_AfterDispose_Throws()
    {
        var pool = DisposedPool();

        Assert.Throws<ObjectDisposedException>(() => pool.TryTakeSlot(TimeSpan.FromSeconds(1), out _));

        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public async Task TakeSlotAsync_AfterDispose_FailsTheReturnedTaskNotTheCall()
    {
        var pool = DisposedPool();

        ValueTask<PoolSlot<TrackedObject>> take = default;
        Assert.DoesNotThrow(() => take = pool.TakeSlotAsync());

        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await take);

        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TryAllocatePush_AfterDispose_Throws()
    {
        var pool = DisposedPool();

        Assert.Throws<ObjectDisposedException>(() => pool.Prewarm(1));

        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.CreatedCount, Is.Zero);
    }

    [Test]
    public void TakeSlot_AfterDisposeWithIdleObjects_ThrowsRatherThanHandingOneOut()
    {
        var pool = new TrackedPool(2);
        pool.Release(pool.TakeSlot());
        pool.Dispose();

        Assert.Throws<ObjectDisposedException>(() => pool.TakeSlot());
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Dispose_WithSyncAndAsyncWaiters_WakesEachWithObjectDisposed(CancellationToken cancellationToken)
    {
        var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        var syncWaiter = Task.Factory.StartNew(() => pool.TakeSlot(), cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        var timedWaiter = Task.Factory.StartNew(() => pool.TryTakeSlot(TimeSpan.FromMinutes(5), out _), cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        var asyncWaiter = pool.TakeSlotAsync(cancellationToken).AsTask();
        WaitUntilWaiting(pool, 3);

        pool.Dispose();

        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await syncWaiter.WaitAsync(s_waitBound, cancellationToken));
        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await timedWaiter.WaitAsync(s_waitBound, cancellationToken));
        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await asyncWaiter.WaitAsync(s_waitBound, cancellationToken));
        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(held.Object.DisposeCount, Is.Zero, "a rented object stays usable until it is released");
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Dispose_WithObjectsRentedWaitersBlockedAndLateReleases_EachObjectDisposedOnceAndPoolEmpty(CancellationToken cancellationToken)
    {
        var pool = new TrackedPool(3);
        pool.Prewarm(3);
        PoolSlot<TrackedObject>[] rented = [pool.TakeSlot(), pool.TakeSlot()];
        PoolSlot<TrackedObject> third = pool.TakeSlot();
        var syncWaiter = Task.Factory.StartNew(() => pool.TakeSlot(), cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        var asyncWaiter = pool.TakeSlotAsync(cancellationToken).AsTask();
        WaitUntilWaiting(pool, 2);
        pool.Release(third); // handed straight to the oldest waiter, so nothing is idle
        PoolSlot<TrackedObject> served = await (await Task.WhenAny(syncWaiter, asyncWaiter)).WaitAsync(s_waitBound, cancellationToken);
        Task<PoolSlot<TrackedObject>> stillWaiting = syncWaiter.IsCompleted ? asyncWaiter : syncWaiter;

        pool.Dispose();

        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await stillWaiting.WaitAsync(s_waitBound, cancellationToken));
        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(0), "rented objects stay usable until released");
        foreach (PoolSlot<TrackedObject> late in rented.Append(served))
        {
            pool.Release(late);
        }

        Assert.Throws<InvalidOperationException>(() => pool.Release(served));
        Assert.That(pool.Created, Has.Count.EqualTo(3));
        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1), "each object disposed once, when it came back");
        Assert.That(pool.WaiterCount, Is.Zero);
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Release_AfterDispose_DisposesTheObjectInsteadOfStoringIt()
    {
        var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> rented = pool.TakeSlot();
        pool.Dispose();

        pool.Release(rented);

        Assert.That(rented.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Release_TwiceAfterDispose_ThrowsAndNeverDisposesTwice()
    {
        var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> rented = pool.TakeSlot();
        pool.Dispose();
        rented.Dispose();

        Assert.Throws<InvalidOperationException>(rented.Dispose);

        Assert.That(rented.Object.DisposeCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(60_000)]
    public void Dispose_WhileThreadsTakeAndRelease_EveryObjectDisposedExactlyOnce(CancellationToken cancellationToken)
    {
        const int Threads = 4;
        var pool = new TrackedPool(8);
        using var start = new Barrier(Threads + 1);
        int taken = 0;

        var workers = StartWorkers(Threads, _ =>
        {
            start.SignalAndWait(cancellationToken);
            try
            {
                while (true)
                {
                    PoolSlot<TrackedObject> slot = pool.TakeSlot();
                    Interlocked.Increment(ref taken);
                    pool.Release(slot);
                }
            }
            catch (ObjectDisposedException)
            {
                // The pool was disposed under us: the end this test waits for.
            }
        });

        start.SignalAndWait(cancellationToken);
        Assert.That(SpinWait.SpinUntil(() => Volatile.Read(ref taken) > 10_000, s_waitBound), Is.True);
        pool.Dispose();

        Assert.That(Task.WaitAll(workers, s_waitBound), Is.True);
        Assert.That(pool.Created.Select(o => o.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    private static TrackedPool DisposedPool()
    {
        var pool = new TrackedPool(2);
        pool.Dispose();
        return pool;
    }
}
