using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// The storage on its own: a thread finds first the slots it made idle, newest first; a hint whose
// slot another thread took is passed over; a thread that holds many slots at once keeps hints for
// all of them; others claim idle slots from the registry, and no slot is ever taken twice.
public sealed class SlotStorageTests
{
    [Test]
    public void TryTakeOwn_AfterKeeps_ReturnsNewestFirstThenNothing()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(3);
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            MakeIdleAndKeep(storage, slot);
        }

        PoolSlot<TrackedObject>?[] taken = [TakeOwn(storage), TakeOwn(storage), TakeOwn(storage), TakeOwn(storage)];

        Assert.That(taken, Is.EqualTo(new[] { slots[2], slots[1], slots[0], null }));
        Assert.That(storage.IdleCount, Is.Zero);
    }

    [Test]
    public void TryTakeOwn_HintWhoseSlotAnotherThreadTook_PassesOverIt()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(2);
        MakeIdleAndKeep(storage, slots[0]);
        MakeIdleAndKeep(storage, slots[1]);

        bool claimedElsewhere = OnOwnThread(() => storage.TryClaim(slots[1]));

        Assert.That(claimedElsewhere, Is.True);
        Assert.That(TakeOwn(storage), Is.SameAs(slots[0]));
        Assert.That(TakeOwn(storage), Is.Null);
        Assert.That(storage.IdleCount, Is.Zero);
    }

    [Test]
    public void KeepOwn_ThreadHoldingManySlotsAtOnce_FindsEveryOneAgainInItsCache()
    {
        const int Held = 200;
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(Held);
        MakeIdleUnkept(storage, slots);
        var held = new List<PoolSlot<TrackedObject>>();
        while (storage.TryClaimAny(out PoolSlot<TrackedObject>? slot))
        {
            held.Add(slot);
        }

        foreach (PoolSlot<TrackedObject> slot in held)
        {
            MakeIdleAndKeep(storage, slot);
        }

        PoolSlot<TrackedObject>?[] taken = [.. Enumerable.Range(0, Held).Select(_ => TakeOwn(storage))];

        Assert.That(held, Has.Count.EqualTo(Held));
        Assert.That(taken, Is.EqualTo(Enumerable.Reverse(held)), "every slot taken from the registry is found again in the cache, newest first");
    }

    [Test]
    public void KeepOwn_CacheFullOfHintsWhoseSlotsWereTaken_OverwritesThemInsteadOfGrowing()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(20);
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            MakeIdleAndKeep(storage, slot);

            // Another thread takes each one at once, as from a thread that only returns objects.
            Assert.That(OnOwnThread(() => storage.TryClaim(slot)), Is.True);
        }

        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            Assert.That(slot.TryReturnIdle(), Is.True);
        }

        // Every slot is idle again, but only the newest hints survive: the cache stayed at its first size.
        PoolSlot<TrackedObject>?[] found = [.. Enumerable.Range(0, 20).Select(_ => TakeOwn(storage)).TakeWhile(slot => slot is not null)];

        Assert.That(found, Is.EqualTo(slots.Reverse().Take(8)));
    }

    [Test]
    public void TryClaimAny_SlotsOtherThreadsMadeIdle_ClaimsEachOnce()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(5);
        OnOwnThread(() =>
        {
            foreach (PoolSlot<TrackedObject> slot in slots)
            {
                MakeIdleAndKeep(storage, slot);
            }

            return true;
        });

        var claimed = new List<PoolSlot<TrackedObject>>();
        while (storage.TryClaimAny(out PoolSlot<TrackedObject>? slot))
        {
            claimed.Add(slot);
        }

        Assert.That(claimed, Is.EquivalentTo(slots));
        Assert.That(storage.IdleCount, Is.Zero, "the claims of one thread balance the keeps of another");
        Assert.That(storage.CountIdleSlots(), Is.Zero);
    }

    [Test]
    public void TryTakeOwn_RetiredSlot_LeftForTryClaimAny()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(1);
        MakeIdleAndKeep(storage, slots[0]);
        slots[0].Retire();

        Assert.That(TakeOwn(storage), Is.Null);
        Assert.That(storage.TryClaimAny(out PoolSlot<TrackedObject>? claimed), Is.True);
        Assert.That(claimed, Is.SameAs(slots[0]));
        Assert.That(claimed!.IsRetired, Is.True);
    }

    [Test]
    public void Register_IndexOfUnregisteredSlot_IsReused()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(3);
        int freed = slots[1].Index;
        storage.Unregister(slots[1]);

        PoolSlot<TrackedObject> next = NewSlot(slots[0].Owner);
        storage.Register(next);

        Assert.That(next.Index, Is.EqualTo(freed));
        Assert.That(storage.Registered, Does.Contain(next).And.Not.Contain(slots[1]));
    }

    // Each worker keeps what it makes idle and takes its own hints first; the claimers take from the
    // registry whatever is idle. Every slot carries a holder stamp, so a slot taken by two threads at
    // once is caught; at the end every slot is idle exactly once and the balance is exact.
    [Test]
    [CancelAfter(120_000)]
    public void OwnersAndClaimers_RacingForTheSameSlots_NeverTakeOneTwiceAndLoseNone(CancellationToken cancellationToken)
    {
        const int Threads = 4;
        const int Rounds = 100_000;
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(16);
        MakeIdleUnkept(storage, slots);

        var violations = new ConcurrentQueue<string>();
        using var start = new Barrier(Threads);
        Task[] workers = [.. Enumerable.Range(1, Threads).Select(holder => Task.Factory.StartNew(() =>
        {
            var held = new List<PoolSlot<TrackedObject>>();
            start.SignalAndWait(cancellationToken);
            for (int round = 0; round < Rounds; round++)
            {
                // Odd workers only claim from the registry; even ones try their own hints first.
                int wanted = 1 + round % 3;
                while (held.Count < wanted
                    && ((holder % 2 == 0 && storage.TryTakeOwn(out PoolSlot<TrackedObject>? slot)) || storage.TryClaimAny(out slot)))
                {
                    if (!slot.Object.TryStampHolder(holder))
                    {
                        violations.Enqueue($"slot {slot.Index} taken by {holder} while held by another");
                    }

                    held.Add(slot);
                }

                foreach (PoolSlot<TrackedObject> slot in held)
                {
                    if (!slot.Object.TryClearHolder(holder))
                    {
                        violations.Enqueue($"slot {slot.Index} changed holder while {holder} held it");
                    }

                    if (!slot.TryReturnIdle())
                    {
                        violations.Enqueue($"slot {slot.Index} was not rented when {holder} returned it");
                    }

                    storage.KeepOwn(slot);
                }

                held.Clear();
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(100)), Is.True, "the stress run did not finish");
        Assert.That(violations, Is.Empty);
        Assert.That(slots.Select(slot => slot.IsIdle), Is.All.True, "every slot returned is idle");
        Assert.That(storage.IdleCount, Is.EqualTo(slots.Length), "the balance of keeps and claims over every thread is exact");
        Assert.That(storage.CountIdleSlots(), Is.EqualTo(slots.Length));
    }

    /// <summary>A storage with <paramref name="count"/> registered slots, rented, as if just made.</summary>
    private static (SlotStorage<TrackedObject> Storage, PoolSlot<TrackedObject>[] Slots) StorageWith(int count)
    {
        var owner = new TrackedPool(int.MaxValue);
        var storage = new SlotStorage<TrackedObject>(int.MaxValue);
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, count).Select(_ => NewSlot(owner))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            storage.Register(slot);
        }

        return (storage, slots);
    }

    private static PoolSlot<TrackedObject> NewSlot(Pool<TrackedObject> owner) => new(owner, new TrackedObject());

    /// <summary>What a release does to storage: the slot made idle, then kept as the calling thread's hint.</summary>
    private static void MakeIdleAndKeep(SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject> slot)
    {
        Assert.That(slot.TryReturnIdle(), Is.True);
        storage.KeepOwn(slot);
    }

    /// <summary>What pre-warming does to storage: slots made idle that no thread keeps a hint of.</summary>
    private static void MakeIdleUnkept(SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots)
    {
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            Assert.That(slot.TryReturnIdle(), Is.True);
            storage.CountIdle();
        }
    }

    private static PoolSlot<TrackedObject>? TakeOwn(SlotStorage<TrackedObject> storage) =>
        storage.TryTakeOwn(out PoolSlot<TrackedObject>? slot) ? slot : null;

    private static T OnOwnThread<T>(Func<T> work)
    {
        T result = default!;
        var thread = new Thread(() => result = work());
        thread.Start();
        Assert.That(thread.Join(TimeSpan.FromSeconds(30)), Is.True);
        return result;
    }
}
