using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed class ThreadSlotCacheTests
{
    [Test]
    public void TryTakeOwn_AfterKeeps_ReturnsNewestFirstThenNull()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        object first = new(), second = new();

        Assert.That(cache.TryKeepOwn(first, gate), Is.True);
        Assert.That(cache.TryKeepOwn(second, gate), Is.True);

        Assert.That(cache.Count, Is.EqualTo(2));
        Assert.That(cache.TryTakeOwn(gate), Is.SameAs(second));
        Assert.That(cache.TryTakeOwn(gate), Is.SameAs(first));
        Assert.That(cache.TryTakeOwn(gate), Is.Null);
        Assert.That(cache.Count, Is.Zero);
    }

    [Test]
    public void TryKeepOwn_CacheFull_ReturnsFalse()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        for (int i = 0; i < ThreadSlotCache.Capacity; i++)
        {
            Assert.That(cache.TryKeepOwn(new object(), gate), Is.True);
        }

        Assert.That(cache.TryKeepOwn(new object(), gate), Is.False);
        Assert.That(cache.Count, Is.EqualTo(ThreadSlotCache.Capacity));
    }

    [Test]
    public void TryKeepOwn_OwnerOnlyReturns_StopsKeepingUntilItTakesAgain()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        for (int i = 0; i < ThreadSlotCache.Capacity; i++)
        {
            cache.TryKeepOwn(new object(), gate);
            cache.TryTakeOwn(gate);
        }

        var kept = new List<bool>();
        for (int i = 0; i < ThreadSlotCache.Capacity + 1; i++)
        {
            kept.Add(cache.TryKeepOwn(new object(), gate));

            // Emptied by a thief each time: the refusal comes from the returns, not from what it holds.
            var stolen = new ThreadSlotCache.Entries();
            gate.Enter();
            cache.StealAll(gate, stolen);
            gate.Exit();
        }

        cache.TryTakeOwn(gate);
        kept.Add(cache.TryKeepOwn(new object(), gate));

        Assert.That(kept.Take(ThreadSlotCache.Capacity), Is.All.True, "the first Capacity returns are kept");
        Assert.That(kept[ThreadSlotCache.Capacity], Is.False, "after Capacity returns and no take it stops");
        Assert.That(kept[^1], Is.True, "a take makes it keep again");
    }

    [Test]
    public void TryDrainOwn_FullWithPushCredit_MovesEverythingOldestFirstAndKeepsAgain()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        object[] kept = [.. Enumerable.Range(0, ThreadSlotCache.Capacity).Select(_ => new object())];
        cache.OnSharedTake(1);
        foreach (object item in kept)
        {
            cache.TryKeepOwn(item, gate);
        }

        var drained = new ThreadSlotCache.Entries();
        int count = cache.TryDrainOwn(drained, gate);

        Assert.That(((ReadOnlySpan<object?>)drained)[..count].ToArray(), Is.EqualTo(kept));
        Assert.That(cache.Count, Is.Zero);
        Assert.That(cache.TryKeepOwn(new object(), gate), Is.True, "an emptied cache keeps again");
    }

    [Test]
    public void TryDrainOwn_OnePushCreditPerSlotTaken_ThenTheFullCacheStaysFull()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        var drainedCounts = new List<int>();
        cache.OnSharedTake(1);
        cache.OnSharedTake(1);
        for (int round = 0; round < 3; round++)
        {
            while (cache.TryKeepOwn(new object(), gate))
            {
            }

            var drained = new ThreadSlotCache.Entries();
            drainedCounts.Add(cache.TryDrainOwn(drained, gate));
        }

        int full = ThreadSlotCache.Capacity;
        Assert.That(drainedCounts, Is.EqualTo(new[] { full, full, 0 }), "two slots taken from the stack, two batch pushes");
        Assert.That(cache.TryKeepOwn(new object(), gate), Is.False, "without a credit the full cache stays full");
    }

    [Test]
    public void TryDrainOwn_NotFullOrGateClosed_DoesNothing()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        cache.OnSharedTake(1);
        for (int i = 0; i < ThreadSlotCache.Capacity - 1; i++)
        {
            cache.TryKeepOwn(new object(), gate);
        }

        var drained = new ThreadSlotCache.Entries();
        int whileNotFull = cache.TryDrainOwn(drained, gate);
        cache.TryKeepOwn(new object(), gate);
        gate.Enter();
        int whileClosed = cache.TryDrainOwn(drained, gate);
        gate.Exit();
        int once = cache.TryDrainOwn(drained, gate);

        Assert.That(whileNotFull, Is.Zero);
        Assert.That(whileClosed, Is.Zero);
        Assert.That(once, Is.EqualTo(ThreadSlotCache.Capacity), "the credit was not spent by the refusals");
    }

    [Test]
    public void RefillLimit_OneBatchPerSlotPushed_ThenOneAtATime()
    {
        var cache = new ThreadSlotCache();
        var limits = new List<int> { cache.RefillLimit };

        cache.OnSharedPush(2);
        for (int i = 0; i < 2; i++)
        {
            limits.Add(cache.RefillLimit);
            cache.OnSharedTake(ThreadSlotCache.Capacity);
        }

        limits.Add(cache.RefillLimit);
        int full = ThreadSlotCache.Capacity;
        Assert.That(limits, Is.EqualTo(new[] { 1, full, full, 1 }), "no batch before a push, then one batch per slot pushed");
    }

    [Test]
    public void RefillLimit_WithCredit_LeavesRoomForTheSlotHandedOut()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        cache.OnSharedPush(1);
        var limits = new List<int>();
        for (int kept = 0; kept < ThreadSlotCache.Capacity; kept++)
        {
            limits.Add(cache.RefillLimit);
            cache.TryKeepOwn(new object(), gate);
        }

        // With k kept, a batch of Capacity - k: one handed out, the rest kept, and one entry of room left.
        int[] expected = [.. Enumerable.Range(0, ThreadSlotCache.Capacity).Select(k => ThreadSlotCache.Capacity - k)];
        Assert.That(limits, Is.EqualTo(expected));
    }

    [Test]
    public void OwnerPaths_GateClosed_NeitherKeepNorTake()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        object kept = new();
        cache.TryKeepOwn(kept, gate);

        gate.Enter();
        bool keptWhileClosed = cache.TryKeepOwn(new object(), gate);
        object? takenWhileClosed = cache.TryTakeOwn(gate);
        gate.Exit();

        Assert.That(keptWhileClosed, Is.False);
        Assert.That(takenWhileClosed, Is.Null);
        Assert.That(cache.TryTakeOwn(gate), Is.SameAs(kept), "the gate reopens once its only entrant exits");
    }

    [Test]
    public void StealAll_TakesEveryKeptObjectOnceNewestFirst()
    {
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        object[] kept = [new(), new(), new()];
        foreach (object item in kept)
        {
            cache.TryKeepOwn(item, gate);
        }

        var stolen = new ThreadSlotCache.Entries();
        gate.Enter();
        int count = cache.StealAll(gate, stolen);
        int again = cache.StealAll(gate, stolen);
        gate.Exit();

        Assert.That(((ReadOnlySpan<object?>)stolen)[..count].ToArray(), Is.EqualTo(kept.Reverse()));
        Assert.That(again, Is.Zero);
        Assert.That(cache.TryTakeOwn(gate), Is.Null, "the owner finds nothing after a theft");
    }

    [Test]
    public void Gate_NestedEntrants_StaysClosedUntilTheLastExits()
    {
        var gate = new ForeignAccessGate();
        var states = new List<bool> { gate.IsClosed };

        gate.Enter();
        gate.Enter();
        states.Add(gate.IsClosed);
        gate.Exit();
        states.Add(gate.IsClosed);
        gate.Exit();
        states.Add(gate.IsClosed);
        gate.Enter();
        states.Add(gate.IsClosed);
        gate.Exit();

        Assert.That(states, Is.EqualTo(new[] { false, true, true, false, true }));
    }

    // The owner works on its cache with plain reads and writes (taking, keeping, and emptying it
    // when full) while two thieves enter the gate and steal from it whenever it looks non-empty. Every
    // object is stamped by whoever takes it and must be free when stamped; an owner that took from
    // or emptied its cache while a thief was inside the gate (or a gate that let a thief in before
    // the owner could see it closed) would hand one object to two takers. Everyone yields now and
    // then, so that on one core the three take turns often instead of once per time slice.
    [Test]
    [CancelAfter(120_000)]
    public void OwnerAndThieves_RacingForOneCache_NeverTakeAnObjectTwice(CancellationToken cancellationToken)
    {
        const int Objects = ThreadSlotCache.Capacity + 4;
        const int OwnerRounds = 1_000_000;
        const int YieldEvery = 64;
        const int MinimumThefts = 10_000;
        const int MinimumDrains = 2_000;
        var gate = new ForeignAccessGate();
        var cache = new ThreadSlotCache();
        var overflow = new ConcurrentQueue<TrackedObject>();
        var violations = new ConcurrentQueue<string>();
        TrackedObject[] objects = [.. Enumerable.Range(0, Objects).Select(_ => new TrackedObject())];
        foreach (TrackedObject item in objects)
        {
            overflow.Enqueue(item);
        }

        int ownerDone = 0;
        int thefts = 0;
        int drains = 0;
        using var start = new Barrier(3);

        void Hold(TrackedObject item, int holder)
        {
            if (!item.TryStampHolder(holder))
            {
                violations.Enqueue($"object {item.Id} taken by {holder} while held by another");
            }
            else if (!item.TryClearHolder(holder))
            {
                violations.Enqueue($"object {item.Id} changed holder while {holder} held it");
            }
        }

        Task owner = Task.Factory.StartNew(() =>
        {
            var drained = new ThreadSlotCache.Entries();
            start.SignalAndWait(cancellationToken);
            // Goes on past its rounds until the thieves have stolen enough, however they are scheduled.
            for (int round = 0; round < OwnerRounds || Volatile.Read(ref thefts) < MinimumThefts || drains < MinimumDrains; round++)
            {
                var item = (TrackedObject?)cache.TryTakeOwn(gate);
                if (item is null && !overflow.TryDequeue(out item))
                {
                    continue;
                }

                Hold(item, holder: 1);
                if (!cache.TryKeepOwn(item, gate))
                {
                    overflow.Enqueue(item);
                }
                else if (round % YieldEvery == 0)
                {
                    // Right after a keep, so the thieves that run now find something to take.
                    Thread.Yield();
                }

                // Top the cache up from what the thieves gave back, so it rarely looks empty to them;
                // as the pool does with a take from its shared stack, that earns a batch push, which
                // empties the cache once it is full.
                if (overflow.TryDequeue(out TrackedObject? extra))
                {
                    cache.OnSharedTake(1);
                    if (!cache.TryKeepOwn(extra, gate))
                    {
                        int count = cache.TryDrainOwn(drained, gate);
                        Volatile.Write(ref drains, drains + (count == 0 ? 0 : 1));
                        for (int i = 0; i < count; i++)
                        {
                            var moved = (TrackedObject)drained[i]!;
                            Hold(moved, holder: 1);
                            overflow.Enqueue(moved);
                        }

                        overflow.Enqueue(extra);
                    }
                }
            }

            Volatile.Write(ref ownerDone, 1);
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default);

        Task[] thieves = [.. Enumerable.Range(2, 2).Select(holder => Task.Factory.StartNew(() =>
        {
            start.SignalAndWait(cancellationToken);
            while (Volatile.Read(ref ownerDone) == 0)
            {
                // Like the pool's thieves, enter only when the cache looks non-empty: thieves that
                // kept the gate closed for good would leave the owner nothing to race with.
                if (cache.Count == 0)
                {
                    Thread.Yield();
                    continue;
                }

                var stolen = new ThreadSlotCache.Entries();
                gate.Enter();
                int count = cache.StealAll(gate, stolen);
                gate.Exit();
                for (int i = 0; i < count; i++)
                {
                    var item = (TrackedObject)stolen[i]!;
                    Interlocked.Increment(ref thefts);
                    Hold(item, holder);
                    overflow.Enqueue(item);
                }
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];

        bool finished = Task.WaitAll([owner, .. thieves], TimeSpan.FromSeconds(100));
        Assert.That(finished, Is.True, $"the race did not finish: {Volatile.Read(ref thefts)} thefts, {Volatile.Read(ref drains)} drains");

        Assert.That(violations, Is.Empty);
        Assert.That(thefts, Is.GreaterThanOrEqualTo(MinimumThefts), "the thieves took from the cache");
        Assert.That(drains, Is.GreaterThanOrEqualTo(MinimumDrains), "the owner drained its full cache");
        var left = new List<TrackedObject>(overflow);
        var rest = new ThreadSlotCache.Entries();
        gate.Enter();
        int restCount = cache.StealAll(gate, rest);
        gate.Exit();
        left.AddRange(((ReadOnlySpan<object?>)rest)[..restCount].ToArray().Cast<TrackedObject>());
        Assert.That(left, Is.EquivalentTo(objects), "every object ends up in exactly one place");
    }
}
