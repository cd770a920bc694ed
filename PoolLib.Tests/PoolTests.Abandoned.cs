using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Abandoned rentals: one held past the timeout is taken back by maintenance, its object discarded and
// its place under the cap handed on; the renter's late release changes nothing, throws nothing, and is counted.
public sealed partial class PoolTests
{
    private static readonly TimeSpan s_abandonedTimeout = TimeSpan.FromMinutes(1);

    [Test]
    [CancelAfter(10_000)]
    public async Task AbandonedRentalTimeout_RentalHeldTooLongWhileATakerWaits_TakenBackAndTheWaiterGetsANewObject(CancellationToken cancellationToken)
    {
        using var discarded = new MetricCollector<long>(null, "PoolLib", "pool.objects.discarded");
        using var lateReleases = new MetricCollector<long>(null, "PoolLib", "pool.abandoned.late_releases");
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> abandoned = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);

        AdvanceInTicks(time, 2 * s_abandonedTimeout);
        PoolSlot<TrackedObject> served = await waiting;
        pool.Release(abandoned);

        Assert.That(served.Object, Is.Not.SameAs(abandoned.Object), "the abandoned object is never handed out again");
        Assert.That(abandoned.Object.DisposeCount, Is.EqualTo(1));
        Assert.That(Reasons(discarded, pool.Name), Is.EqualTo(new[] { "abandoned" }));
        Assert.That(Sum(lateReleases, pool.Name), Is.EqualTo(1));
        Assert.That(pool.CleanUpCount, Is.Zero, "the late release did not clean the object up");
        AssertCounts(pool, total: 1, available: 0);
        pool.Release(served);
        AssertCounts(pool, total: 1, available: 1);
    }

    // A second release while the first is still cleaning up, and while maintenance is claiming the same rental (and will
    // lose it to the first), throws as any second release does: it waits for the claim's outcome instead of reading the
    // rental maintenance marked and passing as a late release of a rental taken back.
    [Test]
    [CancelAfter(10_000)]
    public async Task AbandonedRentalTimeout_SecondReleaseWhileATakeBackThatLosesIsClaiming_Throws(CancellationToken cancellationToken)
    {
        using var lateReleases = new MetricCollector<long>(null, "PoolLib", "pool.abandoned.late_releases");
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = new FakeTimeProvider() });
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        using var cleaning = new ManualResetEventSlim();
        using var finish = new ManualResetEventSlim();
        pool.OnCleanUp = _ =>
        {
            cleaning.Set();
            finish.Wait(cancellationToken);
        };
        Task first = Task.Run(() => pool.Release(slot), cancellationToken);
        cleaning.Wait(cancellationToken);

        // Maintenance between marking its claim of this rental and losing it to the first release.
        SlotHistory history = slot.History!;
        Volatile.Write(ref history.AbandonedRental, SlotHistory.InFlight(slot.Rental));
        Task second = Task.Run(() => pool.Release(slot), cancellationToken);
        Volatile.Write(ref history.AbandonedRental, -1);

        await Assert.ThrowsAsync<InvalidOperationException>(async () => await second);
        finish.Set();
        await first;
        Assert.That(Sum(lateReleases, pool.Name), Is.Zero);
        AssertCounts(pool, total: 1, available: 1);
    }

    // A new object's rental counts from the first tick that sees it, which may fall while HoldSlotInObject runs: a hook
    // that outlasts the timeout has the rental taken back, and the take (or the pre-warming) must not hand out, store
    // or discard again what maintenance discarded.
    [TestCase(false)]
    [TestCase(true)]
    [CancelAfter(10_000)]
    public void AbandonedRentalTimeout_TakenBackWhileTheNewObjectIsHandedItsSlot_DiscardedOnceAndNeverHandedOut(bool prewarm, CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        TrackedObject? slowest = null;
        using var holding = new ManualResetEventSlim();
        using var finish = new ManualResetEventSlim();
        pool.OnHoldSlot = made =>
        {
            if (Interlocked.CompareExchange(ref slowest, made, null) is null)
            {
                holding.Set();
                finish.Wait(cancellationToken);
            }
        };
        PoolSlot<TrackedObject>? taken = null;
        TestThread taker = TestThread.Start(() =>
        {
            if (prewarm)
            {
                pool.Prewarm(1);
            }
            else
            {
                taken = pool.TakeSlot();
            }
        });
        holding.Wait(cancellationToken);

        AdvanceInTicks(time, 2 * s_abandonedTimeout);
        finish.Set();
        Assert.That(taker.Join(s_waitBound), Is.True, "the taker never finished");

        Assert.That(slowest!.DisposeCount, Is.EqualTo(1), "discarded once, by maintenance");
        Assert.That(pool.Registry.Slots.ToArray().Where(s => s is not null).Select(s => s!.Object), Does.Not.Contain(slowest));
        if (prewarm)
        {
            AssertCounts(pool, total: 0, available: 0);
        }
        else
        {
            Assert.That(taken!.Object, Is.Not.SameAs(slowest), "the take made another object");
            AssertCounts(pool, total: 1, available: 0);
        }
    }

    // A take owns the slot it claimed until it hands it out; a validation that outlasts the timeout must not let
    // maintenance and the take both discard it, nor the take hand out what maintenance discarded. A validation that
    // then finds the object disposed and throws, as a connection's check would, must not fail the take either.
    [TestCase("valid")]
    [TestCase("invalid")]
    [TestCase("throws once disposed")]
    [CancelAfter(10_000)]
    public void AbandonedRentalTimeout_TakenBackWhileTheTakeValidates_DiscardedOnceAndNeverHandedOut(string verdict, CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var pool = new ValidatingPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        TrackedObject validated = first.Object;
        pool.Release(first);
        using var validating = new ManualResetEventSlim();
        using var decide = new ManualResetEventSlim();
        pool.OnValidate = candidate =>
        {
            if (ReferenceEquals(candidate, validated))
            {
                validating.Set();
                decide.Wait(cancellationToken);
                ObjectDisposedException.ThrowIf(verdict == "throws once disposed" && candidate.DisposeCount != 0, candidate);
            }

            return verdict != "invalid" || !ReferenceEquals(candidate, validated);
        };
        PoolSlot<TrackedObject>? taken = null;
        TestThread taker = TestThread.Start(() => taken = pool.TakeSlot());
        validating.Wait(cancellationToken);

        AdvanceInTicks(time, 2 * s_abandonedTimeout);
        PoolSlot<TrackedObject> second = pool.TakeSlot();
        PoolSlot<TrackedObject> third = pool.TakeSlot();
        decide.Set();
        pool.Release(second);

        Assert.That(taker.Join(s_waitBound), Is.True, "the taker never finished");
        Assert.That(taken!.Object, Is.SameAs(second.Object), "the taker looked on and got the object released next");
        Assert.That(validated.DisposeCount, Is.EqualTo(1), "discarded once, by maintenance");
        Assert.That(pool.PeakLiveCount, Is.LessThanOrEqualTo(2), "the cap");
        Assert.That(pool.Registry.Slots.ToArray(), Does.Contain(third), "every live slot stays registered");
        AssertCounts(pool, total: 2, available: 0);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task AbandonedRentalTimeout_HandedOverSlotTakenBackBeforeTheWaiterRan_WaiterGetsANewObject(CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var pool = new ValidatingPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        using var accepting = new ManualResetEventSlim();
        using var goOn = new ManualResetEventSlim();

        // The waiter's acceptance of what it is handed stands still, as a waiter not yet scheduled would.
        pool.OnValidate = _ =>
        {
            accepting.Set();
            goOn.Wait(cancellationToken);
            return true;
        };
        PoolSlot<TrackedObject>? taken = null;
        TestThread waiter = TestThread.Start(() => taken = pool.TakeSlot());
        await Poll.UntilAsync(() => pool.WaiterCount == 1, cancellationToken);
        pool.Release(held);
        accepting.Wait(cancellationToken);

        AdvanceInTicks(time, 2 * s_abandonedTimeout);
        goOn.Set();
        Assert.That(waiter.Join(s_waitBound), Is.True, "the waiter never finished");

        Assert.That(taken!.Object, Is.Not.SameAs(held.Object), "what maintenance took back is never handed out");
        Assert.That(taken.Object.DisposeCount, Is.Zero);
        Assert.That(held.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 0);
    }

    // The waiter whose hand-over maintenance took back before it ran was served first; it waits again first, ahead of
    // the takers that queued after it (it once went to the back of the queue).
    [TestCase(false)]
    [TestCase(true)]
    [CancelAfter(10_000)]
    public async Task AbandonedRentalTimeout_HandedOverSlotTakenBackBeforeTheWaiterRan_WaiterKeepsItsPlace(bool async, CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var pool = new ValidatingPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        using var accepting = new ManualResetEventSlim();
        using var goOn = new ManualResetEventSlim();
        int validations = 0;

        // Only the first waiter's acceptance of its hand-over stands still, as a waiter not yet scheduled would.
        pool.OnValidate = _ =>
        {
            if (Interlocked.Increment(ref validations) == 1)
            {
                accepting.Set();
                goOn.Wait(cancellationToken);
            }

            return true;
        };
        Task<PoolSlot<TrackedObject>> TakeOnItsOwnThread() =>
            Task.Factory.StartNew(pool.TakeSlot, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
        Task<PoolSlot<TrackedObject>> first = async ? pool.TakeSlotAsync(cancellationToken).AsTask() : TakeOnItsOwnThread();
        await Poll.UntilAsync(() => pool.WaiterCount == 1, cancellationToken);
        Task<PoolSlot<TrackedObject>> second = TakeOnItsOwnThread();
        await Poll.UntilAsync(() => pool.WaiterCount == 2, cancellationToken);
        Task<PoolSlot<TrackedObject>> third = TakeOnItsOwnThread();
        await Poll.UntilAsync(() => pool.WaiterCount == 3, cancellationToken);
        pool.Release(held);
        accepting.Wait(cancellationToken);

        // Taken back: its place under the cap goes to the second waiter, which makes a new object.
        while (held.Object.DisposeCount == 0)
        {
            time.Advance(s_abandonedTimeout / 4);
        }

        PoolSlot<TrackedObject> secondSlot = await second.WaitAsync(cancellationToken);
        goOn.Set();
        await Poll.UntilAsync(() => pool.WaiterCount == 2, cancellationToken);
        pool.Release(secondSlot);

        Task<PoolSlot<TrackedObject>> served = await Task.WhenAny(first, third).WaitAsync(cancellationToken);
        pool.Release(await served);
        pool.Release(await (served == first ? third : first).WaitAsync(cancellationToken));
        Assert.That(served == first ? "the first" : "the third", Is.EqualTo("the first"), "the waiter served next");
    }

    // Two waiters that lost their hand-overs wait again in the order they came, whichever of them runs first.
    [Test]
    [CancelAfter(20_000)]
    public async Task AbandonedRentalTimeout_TwoWaitersHandOversTakenBack_ServedAgainInArrivalOrder(CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var pool = new ValidatingPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        var accepting = new[] { new SemaphoreSlim(0), new SemaphoreSlim(0) };
        var goOn = new[] { new SemaphoreSlim(0), new SemaphoreSlim(0) };
        int validations = 0;

        // The first two acceptances, the first and second waiters' hand-overs, stand still until let go.
        pool.OnValidate = _ =>
        {
            int validation = Interlocked.Increment(ref validations) - 1;
            if (validation < 2)
            {
                accepting[validation].Release();
                goOn[validation].Wait(cancellationToken);
            }

            return true;
        };
        PoolSlot<TrackedObject>[] held = [pool.TakeSlot(), pool.TakeSlot()];
        var waiters = new Task<PoolSlot<TrackedObject>>[4];
        for (int i = 0; i < waiters.Length; i++)
        {
            waiters[i] = Task.Factory.StartNew(pool.TakeSlot, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);
            int queued = i + 1;
            await Poll.UntilAsync(() => pool.WaiterCount == queued, cancellationToken);
        }

        for (int i = 0; i < 2; i++)
        {
            pool.Release(held[i]);
            await accepting[i].WaitAsync(cancellationToken);
        }

        // Both taken back: their places go to the third and fourth waiters.
        while (held[0].Object.DisposeCount + held[1].Object.DisposeCount < 2)
        {
            time.Advance(s_abandonedTimeout / 4);
        }

        PoolSlot<TrackedObject>[] later = await Task.WhenAll(waiters[2], waiters[3]).WaitAsync(cancellationToken);
        goOn[0].Release();
        await Poll.UntilAsync(() => pool.WaiterCount == 1, cancellationToken);
        goOn[1].Release();
        await Poll.UntilAsync(() => pool.WaiterCount == 2, cancellationToken);
        pool.Release(later[0]);

        Task<PoolSlot<TrackedObject>> served = await Task.WhenAny(waiters[0], waiters[1]).WaitAsync(cancellationToken);
        pool.Release(later[1]);
        pool.Release(await waiters[0].WaitAsync(cancellationToken));
        pool.Release(await waiters[1].WaitAsync(cancellationToken));
        Assert.That(served == waiters[0] ? "the first" : "the second", Is.EqualTo("the first"), "the waiter served next");
    }

    [Test]
    public void Release_AfterAbandonedRentalTakenBack_DoesNotThrowAndIsCounted()
    {
        using var lateReleases = new MetricCollector<long>(null, "PoolLib", "pool.abandoned.late_releases");
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 3, Name = UniqueName(), AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> released = pool.TakeSlot();
        PoolSlot<TrackedObject> releasedWithRental = pool.TakeSlot();
        int rental = releasedWithRental.Rental;
        PoolSlot<TrackedObject> discardedByRenter = pool.TakeSlot();

        AdvanceInTicks(time, 2 * s_abandonedTimeout);

        Assert.DoesNotThrow(() => pool.Release(released));
        Assert.DoesNotThrow(() => released.Dispose());
        Assert.DoesNotThrow(() => pool.Release(releasedWithRental, rental));
        Assert.DoesNotThrow(discardedByRenter.Discard);
        Assert.That(Sum(lateReleases, pool.Name), Is.EqualTo(4));
        Assert.Throws<InvalidOperationException>(() => pool.Release(releasedWithRental, rental + 1), "a rental that was never taken back");
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void AbandonedRentalTimeout_RentalReleasedInTime_KeptAndReusable()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        AdvanceInTicks(time, s_abandonedTimeout / 2);

        pool.Release(slot);
        AdvanceInTicks(time, 4 * s_abandonedTimeout);

        Assert.That(slot.Object.DisposeCount, Is.Zero);
        Assert.Throws<InvalidOperationException>(() => pool.Release(slot), "released twice");
        Assert.That(pool.TakeSlot().Object, Is.SameAs(slot.Object));
    }

    [Test]
    public void AbandonedRentalTimeout_ObjectTakenAgainJustBeforeATick_ThatRentalCountedFromWhenItWasSeen()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, AbandonedRentalTimeout = s_abandonedTimeout, TimeProvider = time });
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        AdvanceInTicks(time, s_abandonedTimeout - s_idleTick);
        pool.Release(slot);
        slot = pool.TakeSlot();

        AdvanceInTicks(time, s_abandonedTimeout - s_idleTick);

        Assert.That(slot.Object.DisposeCount, Is.Zero, "the second rental is younger than the timeout");
        pool.Release(slot);
    }

    [Test]
    [CancelAfter(60_000)]
    public void AbandonedRentalTimeout_ReleasesRacingTakeBacks_EachRentalEndsOnceAndNoTakenBackObjectIsHandedOut(CancellationToken cancellationToken)
    {
        const int Threads = 4;
        const int RentalsPerThread = 20_000;
        using var discarded = new MetricCollector<long>(null, "PoolLib", "pool.objects.discarded");
        using var lateReleases = new MetricCollector<long>(null, "PoolLib", "pool.abandoned.late_releases");
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = Threads, Name = UniqueName(), AbandonedRentalTimeout = TimeSpan.FromSeconds(1), TimeProvider = time });
        using var start = new Barrier(Threads + 1);
        int renting = Threads;
        var failures = new System.Collections.Concurrent.ConcurrentQueue<string>();
        void Rent(int holder)
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < RentalsPerThread; i++)
            {
                // A rental may be taken back as soon as it is handed out (a tick is a loop of the main
                // thread away), so its object may be disposed by now; never held by someone else, though.
                // One taken back before its take handed it out is not handed out: the take looks on.
                PoolSlot<TrackedObject> slot = pool.TakeSlot();
                if (!slot.Object.TryStampHolder(holder))
                {
                    failures.Enqueue($"object {slot.Object.Id} held twice");
                }

                // Now and then hold the object while other threads run, so that sweeps meet rentals in flight.
                if (i % 16 == 0)
                {
                    Thread.Yield();
                }

                slot.Object.TryClearHolder(holder);
                pool.Release(slot);
            }
        }

        // A renter that throws stops renting too, so that the ticks below end and its join reports what it threw.
        List<TestThread> renters = [.. Enumerable.Range(1, Threads).Select(holder => TestThread.Start(() =>
        {
            try
            {
                Rent(holder);
            }
            finally
            {
                Interlocked.Decrement(ref renting);
            }
        }))];

        // Each advance is a tick, and a rental seen at two ticks is past the timeout.
        start.SignalAndWait(cancellationToken);
        while (Volatile.Read(ref renting) != 0)
        {
            cancellationToken.ThrowIfCancellationRequested();
            time.Advance(TimeSpan.FromSeconds(1));
        }

        renters.ForEach(renter => Assert.That(renter.Join(s_waitBound), Is.True, "a renter never finished"));

        long takenBack = Reasons(discarded, pool.Name).Count(reason => reason == "abandoned");
        TestContext.Out.WriteLine($"rentals taken back: {takenBack}");
        Assert.That(failures, Is.Empty);
        long late = Sum(lateReleases, pool.Name);
        Assert.That(late, Is.LessThanOrEqualTo(takenBack), "a rental taken back was released late once, or never handed out");
        Assert.That(pool.Created.Count(created => created.DisposeCount == 1), Is.EqualTo(takenBack));
        Assert.That(pool.Created.Count(created => created.DisposeCount > 1), Is.Zero);
        Assert.That(pool.PeakLiveCount, Is.LessThanOrEqualTo(Threads));
        Assert.That(pool.CleanUpCount, Is.EqualTo(Threads * RentalsPerThread - late), "every rental handed out ended once");
        AssertCounts(pool, total: pool.CreatedCount - (int)takenBack, available: pool.CreatedCount - (int)takenBack);
        PoolSlot<TrackedObject>[] idle = [.. Enumerable.Range(0, pool.AvailableCount).Select(_ => pool.TakeSlot())];
        Assert.That(idle.Select(slot => slot.Object.DisposeCount), Is.All.Zero, "no object taken back is in the pool");
    }

    // User code the timer runs (a leak handler, an object's Dispose) runs after the sweep, so it holds up no later one:
    // here the handler waits for an object that only the next sweep can give back.
    [Test]
    public void AbandonedRentalTimeout_LeakHandlerWaitsForAnObject_TheNextTickTakesTheRentalBackAndServesIt()
    {
        var time = new ManualTimeProvider();
        using var pool = new TrackedPool(new PoolOptions
        {
            MaxCapacity = 1, LeakDetectionThreshold = TimeSpan.FromSeconds(1), AbandonedRentalTimeout = TimeSpan.FromSeconds(2), TimeProvider = time,
        });
        PoolSlot<TrackedObject> abandoned = pool.TakeSlot();
        using var handlerWaits = new ManualResetEventSlim();
        bool handlerTook = false;
        pool.RentalLeakSuspected += (_, _) =>
        {
            handlerWaits.Set();
            handlerTook = pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? slot);
            slot?.Dispose();
        };
        time.Tick();

        time.Advance(TimeSpan.FromSeconds(1));
        TestThread reporter = TestThread.Start(time.Tick);
        Assert.That(handlerWaits.Wait(s_waitBound), Is.True, "the leak was reported");
        time.Advance(TimeSpan.FromSeconds(1));
        time.Tick();

        Assert.That(reporter.Join(s_waitBound), Is.True, "the handler returned");
        Assert.That(handlerTook, Is.True, "the handler's take got the place the rental held");
        Assert.That(abandoned.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void AbandonedRentalTimeout_TakenBackObjectsDisposeBlocks_TheNextTickTakesAnotherBack()
    {
        var time = new ManualTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, AbandonedRentalTimeout = TimeSpan.FromSeconds(2), TimeProvider = time });
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        time.Tick();
        time.Advance(TimeSpan.FromSeconds(1));
        PoolSlot<TrackedObject> second = pool.TakeSlot();
        time.Tick();
        using var firstDisposing = new ManualResetEventSlim();
        using var secondDisposed = new ManualResetEventSlim();
        second.Object.OnDispose = secondDisposed.Set;
        bool sawSecondDisposed = false;
        first.Object.OnDispose = () =>
        {
            firstDisposing.Set();
            sawSecondDisposed = secondDisposed.Wait(s_waitBound);
        };

        // The first rental is past the timeout at this tick, whose Dispose of it waits for the second's.
        time.Advance(TimeSpan.FromSeconds(1));
        TestThread disposer = TestThread.Start(time.Tick);
        Assert.That(firstDisposing.Wait(s_waitBound), Is.True, "the first rental was taken back");
        time.Advance(TimeSpan.FromSeconds(1));
        time.Tick();

        Assert.That(disposer.Join(s_waitBound), Is.True, "the first Dispose returned");
        Assert.That(sawSecondDisposed, Is.True, "the second rental was taken back while the first's Dispose ran");
        AssertCounts(pool, total: 0, available: 0);
    }
}
