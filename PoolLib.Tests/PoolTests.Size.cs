using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// What a pool does the same at any size, thread id or wait: the faults an audit found in a storage
// that walked all its objects when a take missed, and in waits that ran user code under a lock.
public sealed partial class PoolTests
{
    // Managed thread ids are reused once their thread ends, so only threads alive at once reach such an id.
    [Test]
    [CancelAfter(120_000)]
    public void TakeSlot_OnAThreadWhoseIdIsAbove4096_FindsFirstTheObjectItTookLast(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(4);
        pool.Prewarm(4);
        PoolSlot<TrackedObject>? first = null;
        PoolSlot<TrackedObject>? last = null;
        PoolSlot<TrackedObject>? again = null;
        int threadId = 0;

        RunOnAThreadWithAnIdAbove(4096, () =>
        {
            threadId = Environment.CurrentManagedThreadId;
            first = pool.TakeSlot();
            last = pool.TakeSlot();
            pool.Release(first);
            pool.Release(last);
            again = pool.TakeSlot();
            pool.Release(again);
        }, cancellationToken);

        Assert.That(threadId, Is.GreaterThan(4096));
        Assert.That(again, Is.SameAs(last), "the thread's newest take is its first hint, whatever its id");
        AssertCounts(pool, total: 4, available: 4);
    }

    // A thread's hints hold at most the cap; when they are full, the older half goes and the newest is
    // always the slot taken last, so one slot held elsewhere cannot stop the thread using its hints.
    [Test]
    public void TakeSlot_HintsFullAndTheNewestHeldByAnotherThread_FindsFirstTheObjectItTookLast()
    {
        const int Capacity = 8;
        using var pool = new TrackedPool(Capacity);
        PoolSlot<TrackedObject>[] all = [.. Enumerable.Range(0, Capacity).Select(_ => pool.TakeSlot())];
        ReleaseAll(pool, all);
        PoolSlot<TrackedObject> held = OnOwnThread(pool.TakeSlot);

        PoolSlot<TrackedObject> taken = pool.TakeSlot();
        pool.Release(taken);
        PoolSlot<TrackedObject> again = pool.TakeSlot();

        Assert.That(held, Is.SameAs(all[^1]), "the other thread holds this thread's newest hint");
        Assert.That(again, Is.SameAs(taken), "the object this thread took last is its first hint again");
        ReleaseAll(pool, again, held);
        AssertCounts(pool, total: Capacity, available: Capacity);
    }

    // A thread that takes its objects back through its hints leaves their stack entries stale; a take that then finds
    // nothing idle must not walk them all (under a stack's lock) to learn it, nor must a taker that waits, which looks
    // at every stack before it sleeps.
    [Test]
    [CancelAfter(120_000)]
    [TestCase(false)]
    [TestCase(true)]
    public void TryTakeSlot_AllIdleEntriesStaleAndNothingIdle_FailsWithoutWalkingThem(bool waits, CancellationToken cancellationToken)
    {
        const int Capacity = 4_096;
        using var pool = new TrackedPool(Capacity);
        PoolSlot<TrackedObject>[] again = TakeEveryObjectBackThroughHints(pool, Capacity);
        Assert.That(pool.IdleStacks.EntryCount, Is.EqualTo(Capacity), "every entry is stale: its slot was taken back through the hints");

        bool took = OnOwnThread(() => waits
            ? pool.TryTakeSlot(TimeSpan.FromMilliseconds(1), out PoolSlot<TrackedObject>? none)
            : pool.TryTakeSlot(out none));

        Assert.That(took, Is.False);
        int looks = waits ? 2 : 1;
        Assert.That(pool.IdleStacks.EntryCount, Is.GreaterThanOrEqualTo(Capacity - (looks * 64)), "each look (the take's, the wait's) saw a bounded number of entries");
        ReleaseAll(pool, again);
        AssertCounts(pool, total: Capacity, available: Capacity);
    }

    [Test]
    [CancelAfter(120_000)]
    public void TryTakeSlot_AnIdleSlotBeyondThousandsOfStaleEntries_TakesItWithoutCreating(CancellationToken cancellationToken)
    {
        const int Stale = 4_096;
        using var pool = new TrackedPool(Stale + 1);
        PoolSlot<TrackedObject>[] mine = [.. Enumerable.Range(0, Stale).Select(_ => pool.TakeSlot())];
        PoolSlot<TrackedObject> other = OnOwnThread(pool.TakeSlot);
        pool.Release(other);
        ReleaseAll(pool, mine);
        mine = [.. Enumerable.Range(0, Stale).Select(_ => pool.TakeSlot())];
        Assert.That(mine, Does.Not.Contain(other), "this thread took back only what it took");

        PoolSlot<TrackedObject>? found = OnOwnThread(() => pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot) ? slot : null);

        Assert.That(found, Is.SameAs(other));
        Assert.That(pool.CreatedCount, Is.EqualTo(Stale + 1));
        ReleaseAll(pool, [.. mine, found!]);
    }

    /// <summary>Takes <paramref name="count"/> objects, releases them and takes them back: every stack entry is then stale.</summary>
    private static PoolSlot<TrackedObject>[] TakeEveryObjectBackThroughHints(TrackedPool pool, int count)
    {
        ReleaseAll(pool, [.. Enumerable.Range(0, count).Select(_ => pool.TakeSlot())]);
        return [.. Enumerable.Range(0, count).Select(_ => pool.TakeSlot())];
    }

    // What each object costs the pool beyond itself, against the least a pool with a handle per object does: a
    // ConcurrentBag of handles. Counted in bytes allocated on this thread while each fills to the same count, which
    // is exact, growth of their arrays included.
    [Test]
    public void TakeSlot_CreatingTenThousandObjects_AllocatesAtMostTwoAndAHalfTimesABagOfHandles()
    {
        const int Count = 10_000;
        using Pool<object> pool = Pool.Create(Count, () => new object());
        var slots = new PoolSlot<object>[Count];
        var bag = new ConcurrentBag<StrongBox<object>>();
        pool.Release(pool.TakeSlot());
        bag.Add(new StrongBox<object>(new object()));

        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < Count; i++)
        {
            slots[i] = pool.TakeSlot();
        }

        long ours = GC.GetAllocatedBytesForCurrentThread() - before;
        before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 1; i < Count; i++)
        {
            bag.Add(new StrongBox<object>(new object()));
        }

        long handles = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.That((double)ours / Count, Is.LessThanOrEqualTo(2.5 * handles / Count), $"ours {ours / Count} B an object, the bag of handles {handles / Count}");
        Array.ForEach(slots, pool.Release);
    }

    [Test]
    public void Trim_AfterABurstOfTenThousand_KeepsNoTraceOfTheObjectsItDiscarded()
    {
        const int Burst = 10_000;
        using var pool = new TrackedPool(Burst);
        PoolSlot<TrackedObject>[] burst = [.. Enumerable.Range(0, Burst).Select(_ => pool.TakeSlot())];
        ReleaseAll(pool, burst);

        int trimmed = pool.Trim();
        PoolSlot<TrackedObject> next = pool.TakeSlot();

        Assert.That(trimmed, Is.EqualTo(Burst));
        Assert.That(pool.Registry.Slots.Length, Is.LessThanOrEqualTo(16), "the registry shrank with the objects");
        Assert.That(pool.AvailableCount, Is.Zero);
        Assert.That(next.Object, Is.SameAs(pool.Created.Last()), "a new object, made without walking the burst's places");
        pool.Release(next);
    }

    // A counter's listener runs inside the pool's call; one that waits for another thread's release
    // must not wait for ever because the pool holds a lock that release needs.
    [Test]
    [CancelAfter(30_000)]
    public void TryTakeSlot_TimeoutListenerWaitsForAReleaseByAnotherThread_TheReleaseGoesThrough(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName() });
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        Task<PoolSlot<TrackedObject>> queued = Task.Run(pool.TakeSlot, cancellationToken);
        WaitUntilWaiting(pool, 1);
        bool releaseFinishedInListener = false;
        TestThread? release = null;
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, l) =>
            {
                if (instrument.Meter.Name == "PoolLib" && instrument.Name == "pool.take.timeouts")
                {
                    l.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>((instrument, value, tags, state) =>
        {
            if (tags.ToArray().Any(tag => tag.Key == "pool.name" && Equals(tag.Value, pool.Name)))
            {
                release = TestThread.Start(() => pool.Release(held));

                // Only waits: the pool drops what a listener throws, so the join below reports what the release threw.
                releaseFinishedInListener = release.Thread.Join(s_waitBound);
            }
        });
        listener.Start();

        bool taken = pool.TryTakeSlot(TimeSpan.FromMilliseconds(1), out _);
        listener.Dispose();

        Assert.That(release?.Join(s_waitBound), Is.True, "the release finished");
        Assert.That(taken, Is.False);
        Assert.That(releaseFinishedInListener, Is.True, "the release finished while the listener waited for it");
        Assert.That(queued.Wait(s_waitBound, cancellationToken), Is.True, "the queued taker was served");
        pool.Release(queued.Result);
    }

    [Test]
    public void TryTakeSlot_HalfAMillisecondTimeoutExhausted_WaitsThatLongAndCountsATimeout()
    {
        using var timeouts = new Microsoft.Extensions.Diagnostics.Metrics.Testing.MetricCollector<long>(null, "PoolLib", "pool.take.timeouts");
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName() });
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        TimeSpan timeout = TimeSpan.FromTicks(5_000);

        long start = Stopwatch.GetTimestamp();
        bool taken = pool.TryTakeSlot(timeout, out _);
        TimeSpan waited = Stopwatch.GetElapsedTime(start);

        Assert.That(taken, Is.False);
        Assert.That(waited, Is.GreaterThanOrEqualTo(timeout), "the wait lasted at least the timeout, not zero");
        Assert.That(Sum(timeouts, pool.Name), Is.EqualTo(1), "it queued, and timed out");
        Assert.That(pool.WaiterCount, Is.Zero);
        pool.Release(held);
    }

    [Test]
    public void Release_WithTheRentalOfAnEarlierRental_ThrowsAndLeavesTheNewRenterItsObject()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        int firstRental = slot.Rental;
        pool.Release(slot, firstRental);
        PoolSlot<TrackedObject> again = pool.TakeSlot();

        Assert.Throws<InvalidOperationException>(() => pool.Release(slot, firstRental));

        Assert.That(again, Is.SameAs(slot), "the same handle, rented anew");
        Assert.That(again.Rental, Is.EqualTo(firstRental + 1));
        AssertCounts(pool, total: 1, available: 0);
        Assert.That(pool.CleanUpCount, Is.EqualTo(1), "the stale release cleaned nothing up");
        pool.Release(again, again.Rental);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void Release_NegativeRental_ThrowsAndChangesNothing()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        Assert.That(() => pool.Release(slot, -1), Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("rental"));

        AssertCounts(pool, total: 1, available: 0);
        pool.Release(slot);
    }

    // Objects pass between threads all the time: a thread takes what another returned, waiters are
    // handed objects, new threads steal. At the end a thread that never took anything must find every
    // object the pool holds, through the idle stacks alone: none may sit idle where only hints reach.
    [Test]
    [CancelAfter(120_000)]
    public void TakeAndRelease_ObjectsPassingBetweenThreads_EveryIdleObjectReachableByANewThread(CancellationToken cancellationToken)
    {
        const int Capacity = 6;
        const int Workers = 8;
        const int PairsPerWorker = 60_000;
        using var pool = new TrackedPool(Capacity);
        var handOff = new ConcurrentQueue<PoolSlot<TrackedObject>>();
        var violations = new ConcurrentQueue<string>();
        using var start = new Barrier(Workers);

        void Work(int holder)
        {
            start.SignalAndWait(cancellationToken);
            for (int pair = 0; pair < PairsPerWorker; pair++)
            {
                PoolSlot<TrackedObject> slot = pair % 3 == 0 && handOff.TryDequeue(out PoolSlot<TrackedObject>? passed) ? passed : pool.TakeSlot();
                if (!slot.Object.TryStampHolder(holder))
                {
                    violations.Enqueue($"object {slot.Object.Id} handed to {holder} while held by another");
                    continue;
                }

                Thread.SpinWait(pair % 7);
                slot.Object.TryClearHolder(holder);
                if (pair % 5 == 0 && handOff.Count < Capacity / 2)
                {
                    handOff.Enqueue(slot);
                }
                else
                {
                    pool.Release(slot);
                }
            }
        }

        TestThread[] workers = [.. Enumerable.Range(1, Workers).Select(holder => TestThread.Start(() => Work(holder)))];
        foreach (TestThread worker in workers)
        {
            Assert.That(worker.Join(TimeSpan.FromSeconds(100)), Is.True, "a worker never finished");
        }

        while (handOff.TryDequeue(out PoolSlot<TrackedObject>? left))
        {
            pool.Release(left);
        }

        int createdBefore = pool.CreatedCount;
        PoolSlot<TrackedObject>[] found = OnOwnThread(() =>
        {
            var taken = new List<PoolSlot<TrackedObject>>();
            while (pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot))
            {
                taken.Add(slot);
            }

            return taken.ToArray();
        });

        Assert.That(violations, Is.Empty);
        Assert.That(found, Has.Length.EqualTo(Capacity));
        Assert.That(pool.CreatedCount, Is.EqualTo(createdBefore), "every object found idle, none made");
        Assert.That(found.Select(s => s.Object).Distinct().Count(), Is.EqualTo(Capacity));
        ReleaseAll(pool, found);
        AssertCounts(pool, total: Capacity, available: Capacity);
    }

    /// <summary>Runs <paramref name="body"/> on a thread whose managed id is above <paramref name="id"/>, holding enough threads alive to get one.</summary>
    private static void RunOnAThreadWithAnIdAbove(int id, Action body, CancellationToken cancellationToken)
    {
        using var release = new ManualResetEventSlim();
        var blockers = new List<Thread>();
        Exception? failure = null;
        try
        {
            while (true)
            {
                cancellationToken.ThrowIfCancellationRequested();

                // An id is given when the thread is made; it is not reused while the thread lives.
                var thread = new Thread(runsBody =>
                {
                    if (runsBody is true)
                    {
                        try
                        {
                            body();
                        }
                        catch (Exception e)
                        {
                            failure = e;
                        }
                    }
                    else
                    {
                        release.Wait();
                    }
                }, maxStackSize: 256 * 1024);
                bool runsBody = thread.ManagedThreadId > id;
                thread.Start(runsBody);
                if (runsBody)
                {
                    Assert.That(thread.Join(s_waitBound), Is.True, "the body never finished");
                    break;
                }

                blockers.Add(thread);
            }
        }
        finally
        {
            release.Set();
            foreach (Thread blocker in blockers)
            {
                blocker.Join();
            }
        }

        Assert.That(failure, Is.Null);
    }
}
