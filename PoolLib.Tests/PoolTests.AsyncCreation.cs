using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed partial class PoolTests
{
    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_StormOfTakersOverSlowCreations_BoundsCreationsAndServesEveryTaker(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 50, MaxConcurrentCreations = 4 });

        // Every call returns before any creation ends: none waits on one.
        var remaining = Enumerable.Range(0, 200).Select(_ => pool.TakeSlotAsync(cancellationToken).AsTask()).ToHashSet();
        Assert.That(remaining.Any(take => take.IsCompleted), Is.False);

        int served = 0;
        while (remaining.Count > 0)
        {
            while (pool.TryTakeCreation(out AsyncCreatingPool.Creation? creation))
            {
                creation.Succeed();
            }

            await Task.WhenAny(pool.WaitForCreationAsync(cancellationToken), Task.WhenAny(remaining));
            foreach (Task<PoolSlot<TrackedObject>> done in remaining.Where(take => take.IsCompleted).ToList())
            {
                remaining.Remove(done);
                pool.Release(await done);
                served++;
            }
        }

        // Creations begun for takers a release served meanwhile end idle.
        while (pool.AvailableCount != pool.TotalCount)
        {
            while (pool.TryTakeCreation(out AsyncCreatingPool.Creation? late))
            {
                late.Succeed();
            }

            await Task.WhenAny(pool.WaitForCreationAsync(cancellationToken), Poll.UntilAsync(() => pool.AvailableCount == pool.TotalCount, cancellationToken));
        }

        Assert.That(served, Is.EqualTo(200));
        Assert.That(pool.PeakInFlight, Is.InRange(1, 4));
        Assert.That(pool.StartedCount, Is.LessThanOrEqualTo(50));
        Assert.That(pool.TotalCount, Is.EqualTo(pool.StartedCount));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_TakerGaveUpOnItsCreation_CreationServesTheNextTaker(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 1 });
        using var giveUp = new CancellationTokenSource();
        ValueTask<PoolSlot<TrackedObject>> first = pool.TakeSlotAsync(giveUp.Token);
        AsyncCreatingPool.Creation creation = await pool.NextCreationAsync(cancellationToken);

        giveUp.Cancel();
        Assert.That(async () => await first, Throws.InstanceOf<OperationCanceledException>());
        ValueTask<PoolSlot<TrackedObject>> second = pool.TakeSlotAsync(cancellationToken);
        TrackedObject made = creation.Succeed();

        using PoolSlot<TrackedObject> slot = await second;
        Assert.That(slot.Object, Is.SameAs(made));
        Assert.That(pool.StartedCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_ReleaseWhileItsCreationIsUnderWay_ReleaseServesItAndTheCreationGoesIdle(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2 });
        ValueTask<PoolSlot<TrackedObject>> holderTake = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        PoolSlot<TrackedObject> held = await holderTake;

        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        AsyncCreatingPool.Creation creation = await pool.NextCreationAsync(cancellationToken);
        pool.Release(held);
        using PoolSlot<TrackedObject> served = await waiting;
        creation.Succeed();
        await Poll.UntilAsync(() => pool.AvailableCount == 1, cancellationToken);

        Assert.That(served.Object, Is.SameAs(held.Object));
        Assert.That(pool.TotalCount, Is.EqualTo(2));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_CreationFails_FailsTheTakeWithItsExceptionThenFailsFastUntilTheBackoffEnds(CancellationToken cancellationToken)
    {
        var time = new ManualTimeProvider();
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 4, TimeProvider = time, CreateTimeout = null });
        var down = new IOException("backend down");
        ValueTask<PoolSlot<TrackedObject>> first = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Fail(down);

        Assert.That(async () => await first, Throws.Exception.SameAs(down));
        Assert.That(async () => await pool.TakeSlotAsync(cancellationToken), Throws.Exception.SameAs(down));
        Assert.That(() => pool.TakeSlot(), Throws.Exception.SameAs(down));
        Assert.That(pool.StartedCount, Is.EqualTo(1));
        Assert.That(pool.TotalCount, Is.Zero);

        time.Advance(TimeSpan.FromSeconds(1));
        ValueTask<PoolSlot<TrackedObject>> probe = pool.TakeSlotAsync(cancellationToken);
        ValueTask<PoolSlot<TrackedObject>> behindProbe = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        using PoolSlot<TrackedObject> recovered = await probe;

        // One probe at a time while failing; after its success, the next creation begins at once.
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        using PoolSlot<TrackedObject> next = await behindProbe;
        Assert.That(pool.StartedCount, Is.EqualTo(3));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_FailedCreationWhileAReleaseCanServe_WaiterKeepsWaitingForTheRelease(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 1 });
        ValueTask<PoolSlot<TrackedObject>> holderTake = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        PoolSlot<TrackedObject> held = await holderTake;

        // At the cap, the waiter needs a release, not a creation: no creation begins, and none can fail it.
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        Assert.That(pool.TryTakeCreation(out _), Is.False);
        pool.Release(held);

        using PoolSlot<TrackedObject> served = await waiting;
        Assert.That(served.Object, Is.SameAs(held.Object));
        Assert.That(pool.StartedCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task CreateTimeout_CreationOutlastsIt_CancelsTheFactoryAndFailsTheTakeWithTimeout(CancellationToken cancellationToken)
    {
        var time = new ManualTimeProvider();
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2, TimeProvider = time, CreateTimeout = TimeSpan.FromSeconds(5) });
        ValueTask<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken);
        AsyncCreatingPool.Creation creation = await pool.NextCreationAsync(cancellationToken);

        time.Tick();

        Assert.That(creation.Token.IsCancellationRequested, Is.True);
        Assert.That(async () => await take, Throws.TypeOf<TimeoutException>().With.InnerException.InstanceOf<OperationCanceledException>());
        Assert.That(pool.TotalCount, Is.Zero);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlot_AsyncFactory_BlocksOnlyItsCallerUntilTheCreationEnds(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 1 });
        var taker = Task.Factory.StartNew(() => pool.TakeSlot(), cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);

        TrackedObject made = (await pool.NextCreationAsync(cancellationToken)).Succeed();

        using PoolSlot<TrackedObject> slot = await taker.WaitAsync(cancellationToken);
        Assert.That(slot.Object, Is.SameAs(made));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TryTakeSlot_AsyncFactoryNothingIdle_ReturnsFalseAndMakesAnObjectForTheNextTaker(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2 });

        bool taken = pool.TryTakeSlot(out PoolSlot<TrackedObject>? none);
        Assert.That(pool.TryTakeSlot(out _), Is.False);
        TrackedObject made = (await pool.NextCreationAsync(cancellationToken)).Succeed();
        await Poll.UntilAsync(() => pool.AvailableCount == 1, cancellationToken);

        Assert.That(taken, Is.False);
        Assert.That(none, Is.Null);
        Assert.That(pool.StartedCount, Is.EqualTo(1));
        Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? next), Is.True);
        Assert.That(next!.Object, Is.SameAs(made));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_ObjectIdleLongerThanValidateAfterIdle_ChecksItAndDiscardsItIfUnhealthy(CancellationToken cancellationToken)
    {
        var time = new ManualTimeProvider();
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2, TimeProvider = time, ValidateAfterIdle = TimeSpan.FromSeconds(10) });
        ValueTask<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken);
        TrackedObject stale = (await pool.NextCreationAsync(cancellationToken)).Succeed();
        pool.Release(await take);
        pool.OnValidateAsync = (_, _) => new ValueTask<bool>(false);

        time.Advance(TimeSpan.FromSeconds(10));
        ValueTask<PoolSlot<TrackedObject>> retake = pool.TakeSlotAsync(cancellationToken);
        TrackedObject fresh = (await pool.NextCreationAsync(cancellationToken)).Succeed();
        using PoolSlot<TrackedObject> slot = await retake;

        Assert.That(pool.ValidatedAsync, Is.EqualTo(new[] { stale }));
        Assert.That(stale.DisposeCount, Is.EqualTo(1));
        Assert.That(slot.Object, Is.SameAs(fresh));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeSlotAsync_ObjectIdleLessThanValidateAfterIdle_HandsItOutUnchecked(CancellationToken cancellationToken)
    {
        var time = new ManualTimeProvider();
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2, TimeProvider = time, ValidateAfterIdle = TimeSpan.FromSeconds(10) });
        ValueTask<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        PoolSlot<TrackedObject> first = await take;
        time.Advance(TimeSpan.FromSeconds(30));
        pool.Release(first);

        time.Advance(TimeSpan.FromSeconds(9));
        PoolSlot<TrackedObject> again = await pool.TakeSlotAsync(cancellationToken);
        pool.Release(again);
        time.Advance(TimeSpan.FromSeconds(20));
        using PoolSlot<TrackedObject> synchronous = pool.TakeSlot();

        Assert.That(again.Object, Is.SameAs(first.Object));
        Assert.That(synchronous.Object, Is.SameAs(first.Object), "A synchronous take runs only Validate.");
        Assert.That(pool.ValidatedAsync, Is.Empty);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task MinIdle_AsyncPool_FilledOnceStartedAndAgainAfterADiscard(CancellationToken cancellationToken)
    {
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 4, MinIdle = 2 });
        Assert.That(pool.TotalCount, Is.Zero, "Filling starts after construction, not in the base constructor.");

        pool.FillNow();
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        await Poll.UntilAsync(() => pool.AvailableCount == 2, cancellationToken);
        (await pool.TakeSlotAsync(cancellationToken)).Discard();

        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        await Poll.UntilAsync(() => pool.AvailableCount == 2, cancellationToken);
        Assert.That(pool.TryTakeCreation(out _), Is.False);
        Assert.That(pool.StartedCount, Is.EqualTo(3));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Create_AsyncFactory_FillsMinIdleFromTheStart(CancellationToken cancellationToken)
    {
        int made = 0;
        using Pool<TrackedObject> pool = Pool.Create(
            new PoolOptions { MaxCapacity = 4, MinIdle = 3 },
            async token =>
            {
                await Task.Yield();
                Interlocked.Increment(ref made);
                return new TrackedObject();
            });

        await Poll.UntilAsync(() => pool.AvailableCount == 3, cancellationToken);

        Assert.That(Volatile.Read(ref made), Is.EqualTo(3));
        Assert.That(pool.TotalCount, Is.EqualTo(3));
    }

    [Test]
    public void Constructor_SubclassOverridesNeitherConstructor_ThrowsNotSupported()
    {
        Assert.That(() => new ConstructorlessPool(), Throws.InstanceOf<NotSupportedException>().With.Message.Contains("ObjectConstructorAsync"));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Dispose_CreationsUnderWay_CancelsThemAndDisposesWhatArrivesLate(CancellationToken cancellationToken)
    {
        var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2, CreateTimeout = null });
        ValueTask<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken);
        AsyncCreatingPool.Creation creation = await pool.NextCreationAsync(cancellationToken);

        pool.Dispose();

        Assert.That(creation.Token.IsCancellationRequested, Is.True);
        Assert.That(async () => await take, Throws.InstanceOf<ObjectDisposedException>());
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Metrics_CreationsThatFailOrTimeOut_CountedByReason(CancellationToken cancellationToken)
    {
        using var failures = new MetricCollector<long>(null, "PoolLib", "pool.objects.create_failures");
        using var created = new MetricCollector<long>(null, "PoolLib", "pool.objects.created");
        var time = new ManualTimeProvider();
        using var pool = new AsyncCreatingPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), TimeProvider = time, CreateTimeout = TimeSpan.FromSeconds(5) });
        ValueTask<PoolSlot<TrackedObject>> failing = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Fail(new IOException("refused"));
        Assert.That(async () => await failing, Throws.InstanceOf<IOException>());
        time.Advance(TimeSpan.FromMinutes(1));
        ValueTask<PoolSlot<TrackedObject>> timingOut = pool.TakeSlotAsync(cancellationToken);
        await pool.NextCreationAsync(cancellationToken);
        time.Tick();
        Assert.That(async () => await timingOut, Throws.InstanceOf<TimeoutException>());
        time.Advance(TimeSpan.FromMinutes(1));
        ValueTask<PoolSlot<TrackedObject>> succeeding = pool.TakeSlotAsync(cancellationToken);
        (await pool.NextCreationAsync(cancellationToken)).Succeed();
        pool.Release(await succeeding);

        Assert.That(Reasons(failures, pool.Name), Is.EquivalentTo(new[] { "failed", "timed_out" }));
        Assert.That(Sum(created, pool.Name), Is.EqualTo(1));
    }

    // Takers that cancel, creations that fail or are slow, objects discarded: the cap, the bound on creations and the
    // units must all hold, and every taker must end, served, cancelled or failed by a creation.
    [Test]
    [CancelAfter(120_000)]
    public async Task TakeSlotAsync_StressWithFailingSlowCreationsAndCancellations_InvariantsHold(CancellationToken cancellationToken)
    {
        const int MaxCapacity = 8;
        const int MaxConcurrentCreations = 3;
        int inFlight = 0;
        int peakInFlight = 0;
        int made = 0;
        int served = 0;
        int holders = 0;
        using var pool = Pool.Create(
            new PoolOptions { MaxCapacity = MaxCapacity, MaxConcurrentCreations = MaxConcurrentCreations, CreateTimeout = null },
            async token =>
            {
                int now = Interlocked.Increment(ref inFlight);
                InterlockedMax(ref peakInFlight, now);
                try
                {
                    await Task.Yield();
                    if (Random.Shared.Next(10) == 0)
                    {
                        throw new IOException("refused");
                    }

                    Interlocked.Increment(ref made);
                    return new TrackedObject();
                }
                finally
                {
                    Interlocked.Decrement(ref inFlight);
                }
            });

        async Task TakerAsync(int taker)
        {
            for (int i = 0; i < 300; i++)
            {
                using var giveUp = new CancellationTokenSource();
                if (Random.Shared.Next(4) == 0)
                {
                    giveUp.Cancel();
                }

                PoolSlot<TrackedObject> slot;
                try
                {
                    slot = await pool.TakeSlotAsync(giveUp.Token);
                }
                catch (Exception expected) when (expected is IOException or OperationCanceledException)
                {
                    continue;
                }

                Assert.That(slot.Object.TryStampHolder(taker), Is.True, "an object held by two takers");
                InterlockedMax(ref holders, pool.TotalCount);
                await Task.Yield();
                Assert.That(slot.Object.TryClearHolder(taker), Is.True);
                Interlocked.Increment(ref served);
                if (Random.Shared.Next(20) == 0)
                {
                    slot.Discard();
                }
                else
                {
                    pool.Release(slot);
                }
            }
        }

        await Task.WhenAll(Enumerable.Range(1, 32).Select(taker => Task.Run(() => TakerAsync(taker), cancellationToken))).WaitAsync(cancellationToken);
        await Poll.UntilAsync(() => Volatile.Read(ref inFlight) == 0 && pool.AvailableCount == pool.TotalCount, cancellationToken);

        Assert.That(Volatile.Read(ref served), Is.GreaterThan(0));
        Assert.That(peakInFlight, Is.LessThanOrEqualTo(MaxConcurrentCreations));
        Assert.That(holders, Is.LessThanOrEqualTo(MaxCapacity));
        Assert.That(pool.TotalCount, Is.InRange(0, MaxCapacity));
        Assert.That(pool.WaiterCount, Is.Zero);

        // Every unit comes back: the pool can still make MaxCapacity objects at once.
        var all = new List<PoolSlot<TrackedObject>>();
        while (all.Count < MaxCapacity)
        {
            try
            {
                all.Add(await pool.TakeSlotAsync(cancellationToken));
            }
            catch (IOException)
            {
                // A creation failed; the back-off ends, and the next take makes another.
                await Task.Delay(TimeSpan.FromMilliseconds(50), cancellationToken);
            }
        }

        Assert.That(pool.TotalCount, Is.EqualTo(MaxCapacity));
        Assert.That(all.Select(slot => slot.Object).Distinct().Count(), Is.EqualTo(MaxCapacity));
        all.ForEach(pool.Release);
    }

    private static void InterlockedMax(ref int target, int value)
    {
        for (int seen = Volatile.Read(ref target); value > seen; seen = Volatile.Read(ref target))
        {
            Interlocked.CompareExchange(ref target, value, seen);
        }
    }

    /// <summary>A subclass that forgot to say how to make an object.</summary>
    private sealed class ConstructorlessPool() : Pool<TrackedObject>(1);
}
