using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed partial class PoolTests
{
    private static readonly TimeSpan s_waitBound = TimeSpan.FromSeconds(20);

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_Exhausted_CompletesWithTheReleasedSlot(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        Assert.That(waiting.IsCompleted, Is.False);

        pool.Release(held);
        PoolSlot<TrackedObject> handedOver = await waiting;

        Assert.That(handedOver, Is.SameAs(held));
        Assert.That(pool.CleanUpCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TryTakeSlot_InfiniteTimeout_WaitsForARelease()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        var taker = Task.Run(() => (pool.TryTakeSlot(Timeout.InfiniteTimeSpan, out PoolSlot<TrackedObject>? slot), slot));
        WaitUntilWaiting(pool, 1);

        pool.Release(held);

        Assert.That(taker.Wait(s_waitBound), Is.True);
        Assert.That(taker.Result.Item1, Is.True);
        Assert.That(taker.Result.slot, Is.SameAs(held));
    }

    [Test]
    public void TryTakeSlot_TimeoutExpires_ReturnsFalseAndLeavesNoWaiterBehind()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();

        bool taken = pool.TryTakeSlot(TimeSpan.FromMilliseconds(20), out PoolSlot<TrackedObject>? slot);

        Assert.That(taken, Is.False);
        Assert.That(slot, Is.Null);
        Assert.That(pool.WaiterCount, Is.Zero);
        pool.Release(held);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_TokenAlreadyCancelled_ThrowsWithoutQueueing(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        using PoolSlot<TrackedObject> held = pool.TakeSlot();
        using var cancellation = new CancellationTokenSource();
        cancellation.Cancel();

        await Assert.ThrowsAsync<TaskCanceledException>(async () => await pool.TakeSlotAsync(cancellation.Token));

        Assert.That(pool.WaiterCount, Is.Zero);
    }

    [Test]
    public async Task TakeSlotAsync_TokenAlreadyCancelledOnAThreadWhoseObjectIsIdle_ThrowsAndHandsNothingOut()
    {
        using var pool = new TrackedPool(2);
        pool.TakeSlot().Dispose();
        using var cancellation = new CancellationTokenSource();
        cancellation.Cancel();

        await Assert.ThrowsAsync<TaskCanceledException>(async () => await pool.TakeSlotAsync(cancellation.Token));

        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_CancelledWhileWaiting_ThrowsAndLeavesNothingBehind(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        using var cancellation = new CancellationTokenSource();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellation.Token);

        cancellation.Cancel();

        await Assert.ThrowsAsync<TaskCanceledException>(async () => await waiting);
        Assert.That(pool.WaiterCount, Is.Zero);
        pool.Release(held);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Release_FiftyWaiters_ServesEachInArrivalOrder(CancellationToken cancellationToken)
    {
        const int Waiters = 50;
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        var waiting = Enumerable.Range(0, Waiters).Select(_ => pool.TakeSlotAsync(cancellationToken).AsTask()).ToArray();
        Assert.That(pool.WaiterCount, Is.EqualTo(Waiters));

        for (int i = 0; i < Waiters; i++)
        {
            pool.Release(held);

            Assert.That(pool.WaiterCount, Is.EqualTo(Waiters - i - 1), "each release serves exactly one waiter");
            Assert.That(pool.AvailableCount, Is.Zero, "a release with waiters queued hands over instead of storing");
            held = await waiting[i].WaitAsync(s_waitBound, cancellationToken);
            Assert.That(waiting.Skip(i + 1).Any(task => task.IsCompleted), Is.False, $"only waiter {i}, the oldest, may be served by release {i}");
        }

        pool.Release(held);
        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(pool.CleanUpCount, Is.EqualTo(Waiters + 1));
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlot_BlockingTakerArrivesAfterAnAsyncWaiter_IsServedSecond(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        Task<PoolSlot<TrackedObject>> first = pool.TakeSlotAsync(cancellationToken).AsTask();
        var second = Task.Factory.StartNew(pool.TakeSlot, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        WaitUntilWaiting(pool, 2);

        pool.Release(held);
        PoolSlot<TrackedObject> firstSlot = await first.WaitAsync(s_waitBound, cancellationToken);

        Assert.That(second.IsCompleted, Is.False, "the later taker must not get the object ahead of the earlier one");
        pool.Release(firstSlot);
        Assert.That(await second.WaitAsync(s_waitBound, cancellationToken), Is.SameAs(held));
        Assert.That(pool.WaiterCount, Is.Zero);
    }

    // A blocking taker takes its place in arrival order before it spins or yields: a blocking taker that comes after it
    // waits behind it, and the one release is the first's.
    [Test]
    [CancelAfter(20_000)]
    public void TakeSlot_SecondBlockingTakerArrivesWhileTheFirstWaits_IsServedSecond(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        var first = Task.Factory.StartNew(pool.TakeSlot, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        WaitUntilWaiting(pool, 1);
        var second = Task.Factory.StartNew(pool.TakeSlot, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        WaitUntilWaiting(pool, 2);

        pool.Release(held);

        Assert.That(first.Wait(s_waitBound, cancellationToken), Is.True);
        Assert.That(first.Result, Is.SameAs(held));
        Assert.That(second.IsCompleted, Is.False, "the later taker must not get the object ahead of the earlier one");
        pool.Release(first.Result);
        Assert.That(second.Wait(s_waitBound, cancellationToken), Is.True);
        Assert.That(second.Result, Is.SameAs(held));
        Assert.That(pool.WaiterCount, Is.Zero);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Release_HalfOfFiftyWaitersCancelled_ServesEveryOtherAndCountsStayExact(CancellationToken cancellationToken)
    {
        const int Waiters = 50;
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        var cancellations = Enumerable.Range(0, Waiters).Select(_ => new CancellationTokenSource()).ToArray();
        var waiting = cancellations.Select(c => pool.TakeSlotAsync(c.Token).AsTask()).ToArray();

        for (int i = 0; i < Waiters; i += 2)
        {
            await cancellations[i].CancelAsync();
        }

        Assert.That(pool.WaiterCount, Is.EqualTo(Waiters / 2));
        for (int i = 1; i < Waiters; i += 2)
        {
            pool.Release(held);
            held = await waiting[i].WaitAsync(s_waitBound, cancellationToken);
        }

        pool.Release(held);
        for (int i = 0; i < Waiters; i += 2)
        {
            // A cancelled take's task ends once its continuation has run, on the thread pool.
            Task<PoolSlot<TrackedObject>> cancelled = waiting[i];
            Assert.That(async () => await cancelled.WaitAsync(s_waitBound, cancellationToken), Throws.InstanceOf<OperationCanceledException>(), $"waiter {i} was cancelled");
        }

        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(pool.CleanUpCount, Is.EqualTo((Waiters / 2) + 1));
        AssertCounts(pool, total: 1, available: 1);
        foreach (var cancellation in cancellations)
        {
            cancellation.Dispose();
        }
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Release_CleanUpThrowsWithWaiterQueued_WaiterCreatesANewObject(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        pool.OnCleanUp = _ => throw new FormatException("clean-up failed");

        Assert.Throws<FormatException>(() => pool.Release(held));
        PoolSlot<TrackedObject> fresh = await waiting;

        Assert.That(fresh.Object, Is.Not.SameAs(held.Object));
        Assert.That(pool.CreatedCount, Is.EqualTo(2));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_GrantedCapacityButConstructorThrows_ExceptionReachesWaiterAndCapacityComesBack(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        pool.OnCleanUp = _ => throw new FormatException("clean-up failed");
        pool.BeforeConstruct = () => throw new ArithmeticException("constructor failed");

        Assert.Throws<FormatException>(() => pool.Release(held));

        await Assert.ThrowsAsync<ArithmeticException>(async () => await waiting);
        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.WaiterCount, Is.Zero);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Release_WaiterQueued_HandsOverSoANewTakerCannotTakeIt(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        PoolSlot<TrackedObject> second = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);

        pool.Release(first);

        Assert.That(pool.WaiterCount, Is.Zero, "the release goes to the waiter");
        Assert.That(pool.TryTakeSlot(out _), Is.False);
        Assert.That(await waiting.AsTask().WaitAsync(s_waitBound, cancellationToken), Is.SameAs(first));
        pool.Release(second);
        Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? late), Is.True);
        Assert.That(late, Is.SameAs(second));
    }

    [Test]
    [CancelAfter(60_000)]
    public void TakeSlot_CapacityOnePingPongBetweenSixteenThreads_Finishes(CancellationToken cancellationToken)
    {
        const int Threads = 16;
        const int RoundsPerThread = 2_000;
        using var pool = new TrackedPool(1);
        using var start = new Barrier(Threads);
        int overlapping = 0;

        var workers = StartWorkers(Threads, worker =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < RoundsPerThread; i++)
            {
                using PoolSlot<TrackedObject> slot = pool.TakeSlot();
                if (!slot.Object.TryStampHolder(worker + 1) || !slot.Object.TryClearHolder(worker + 1))
                {
                    Interlocked.Increment(ref overlapping);
                }
            }
        });

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(50)), Is.True, "a lost wake-up leaves a thread waiting for ever");
        Assert.That(overlapping, Is.Zero);
        Assert.That(pool.CleanUpCount, Is.EqualTo(Threads * RoundsPerThread));
        Assert.That(pool.WaiterCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    [CancelAfter(60_000)]
    public void TakeSlot_SyncAndAsyncWaitersMixed_AllServedAndCountsExact(CancellationToken cancellationToken)
    {
        const int SyncThreads = 4;
        const int AsyncTakers = 4;
        const int Rounds = 5_000;
        using var pool = new TrackedPool(2);
        using var start = new Barrier(SyncThreads + AsyncTakers);
        int overlapping = 0;

        // Both objects are held until every taker has queued, so the run starts with sync and async
        // waiters in one queue rather than leaving that to the scheduler.
        PoolSlot<TrackedObject>[] held = [pool.TakeSlot(), pool.TakeSlot()];

        void Use(PoolSlot<TrackedObject> slot, int holder)
        {
            if (!slot.Object.TryStampHolder(holder) || !slot.Object.TryClearHolder(holder))
            {
                Interlocked.Increment(ref overlapping);
            }

            slot.Dispose();
        }

        var sync = StartWorkers(SyncThreads, worker =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < Rounds; i++)
            {
                PoolSlot<TrackedObject>? slot;
                if (i % 2 == 0)
                {
                    slot = pool.TakeSlot();
                }
                else
                {
                    Assert.That(pool.TryTakeSlot(s_waitBound, out slot), Is.True);
                }

                Use(slot!, worker + 1);
            }
        });
        var async = Enumerable.Range(0, AsyncTakers).Select(taker => Task.Run(async () =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < Rounds; i++)
            {
                Use(await pool.TakeSlotAsync(cancellationToken), 100 + taker);
            }
        }, cancellationToken)).ToArray();
        WaitUntilWaiting(pool, SyncThreads + AsyncTakers);
        foreach (PoolSlot<TrackedObject> slot in held)
        {
            slot.Dispose();
        }

        Assert.That(Task.WaitAll([.. sync, .. async], TimeSpan.FromSeconds(50)), Is.True);
        Assert.That(overlapping, Is.Zero);
        Assert.That(pool.CleanUpCount, Is.EqualTo((SyncThreads + AsyncTakers) * Rounds + held.Length));
        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(pool.TotalCount, Is.InRange(1, 2));
        Assert.That(pool.AvailableCount, Is.EqualTo(pool.TotalCount));
    }

    /// <summary>Starts one dedicated thread per worker, so that blocking takers never starve the thread pool.</summary>
    private static Task[] StartWorkers(int count, Action<int> body) =>
        Enumerable.Range(0, count)
            .Select(worker => Task.Factory.StartNew(() => body(worker), CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default))
            .ToArray();

    /// <summary>Waits, bounded, until <paramref name="count"/> takers are queued: a state change the test cannot be told about otherwise.</summary>
    private static void WaitUntilWaiting<T>(Pool<T> pool, int count)
        where T : class
    {
        Assert.That(SpinWait.SpinUntil(() => pool.WaiterCount >= count, s_waitBound), Is.True, "the taker never started waiting");
    }
}
