using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// The storage on its own: a thread finds first the slots it took, once they are back, the most
// recently taken first; a hint whose slot another thread took is passed over; a thread that holds
// many slots at once keeps hints for all of them; others claim idle slots from the registry, and no
// slot is ever taken twice.
public sealed class SlotStorageTests
{
    [Test]
    public void TryTakeOwn_SlotsTheThreadTookAreBack_ReturnsThemMostRecentlyTakenFirstThenNothing()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(3);
        MakeIdleUnkept(slots);
        PoolSlot<TrackedObject>[] taken = ClaimAll(storage);
        MakeIdleUnkept(taken);

        PoolSlot<TrackedObject>?[] again = [TakeOwn(storage), TakeOwn(storage), TakeOwn(storage), TakeOwn(storage)];

        Assert.That(again, Is.EqualTo(new[] { taken[2], taken[1], taken[0], null }));
        Assert.That(storage.CountIdle(), Is.Zero);
    }

    [Test]
    public void TryTakeOwn_HintWhoseSlotAnotherThreadTook_PassesOverIt()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(3);
        MakeIdleUnkept(slots);
        PoolSlot<TrackedObject>[] taken = ClaimAll(storage);
        MakeIdleUnkept(taken);
        PoolSlot<TrackedObject>? first = TakeOwn(storage);

        bool claimedElsewhere = OnOwnThread(() => storage.TryClaim(taken[1]));

        Assert.That(first, Is.SameAs(taken[2]));
        Assert.That(claimedElsewhere, Is.True);
        Assert.That(TakeOwn(storage), Is.SameAs(taken[0]));
        Assert.That(TakeOwn(storage), Is.Null);
    }

    // In the middle of a long rental the thread holds what it took last: its hints are not tried, so
    // that a take does not look at every object it holds before it turns to the registry.
    [Test]
    public void TryTakeOwn_MostRecentlyTakenStillHeld_LooksAtNoOtherHint()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(2);
        MakeIdleUnkept(slots);
        PoolSlot<TrackedObject>[] taken = ClaimAll(storage);

        Assert.That(taken[0].TryReturnIdle(), Is.True);

        Assert.That(TakeOwn(storage), Is.Null, "the older hint is idle, but the newest is still held");
        Assert.That(taken[1].TryReturnIdle(), Is.True);
        Assert.That(TakeOwn(storage), Is.SameAs(taken[1]));
        Assert.That(TakeOwn(storage), Is.SameAs(taken[0]));
    }

    [Test]
    public void TryTakeOwn_ThreadHoldingManySlotsAtOnce_FindsEveryOneAgainOnceBack()
    {
        const int Held = 200;
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(Held);
        MakeIdleUnkept(slots);
        PoolSlot<TrackedObject>[] taken = ClaimAll(storage);
        MakeIdleUnkept(taken);

        PoolSlot<TrackedObject>?[] again = [.. Enumerable.Range(0, Held).Select(_ => TakeOwn(storage))];
        MakeIdleUnkept(taken);
        PoolSlot<TrackedObject>?[] third = [.. Enumerable.Range(0, Held).Select(_ => TakeOwn(storage))];

        Assert.That(taken, Has.Length.EqualTo(Held));
        Assert.That(again, Is.EqualTo(taken.Reverse()), "every slot taken from the registry is found again in the cache");
        Assert.That(third, Is.EquivalentTo(taken), "and again in the next round, from the hints of the round before");
    }

    [Test]
    public void TryTakeOwn_ReturnedByAnotherThread_FoundByTheThreadThatTookIt()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(1);
        MakeIdleUnkept(slots);
        PoolSlot<TrackedObject>[] taken = ClaimAll(storage);

        OnOwnThread(() => taken[0].TryReturnIdle());

        Assert.That(TakeOwn(storage), Is.SameAs(taken[0]));
    }

    [Test]
    public void TryClaimAny_SlotsIdleAnywhere_ClaimsEachOnce()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(5);
        MakeIdleUnkept(slots);

        PoolSlot<TrackedObject>[] claimed = ClaimAll(storage);

        Assert.That(claimed, Is.EquivalentTo(slots));
        Assert.That(storage.CountIdle(), Is.Zero);
    }

    [Test]
    public void TryTakeOwn_RetiredSlot_LeftForTryClaimAny()
    {
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(1);
        MakeIdleUnkept(slots);
        PoolSlot<TrackedObject>[] taken = ClaimAll(storage);
        MakeIdleUnkept(taken);
        taken[0].Retire();

        Assert.That(TakeOwn(storage), Is.Null);
        Assert.That(storage.TryClaimAny(out PoolSlot<TrackedObject>? claimed), Is.True);
        Assert.That(claimed, Is.SameAs(taken[0]));
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

    // Each worker takes its own hints first (even workers) or only scans the registry (odd ones), and
    // returns what it took; every slot carries a holder stamp, so a slot taken by two threads at once
    // is caught; at the end every slot is idle.
    [Test]
    [CancelAfter(120_000)]
    public void OwnersAndClaimers_RacingForTheSameSlots_NeverTakeOneTwiceAndLoseNone(CancellationToken cancellationToken)
    {
        const int Threads = 4;
        const int Rounds = 100_000;
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] slots) = StorageWith(16);
        MakeIdleUnkept(slots);

        var violations = new ConcurrentQueue<string>();
        using var start = new Barrier(Threads);
        Task[] workers = [.. Enumerable.Range(1, Threads).Select(holder => Task.Factory.StartNew(() =>
        {
            var held = new List<PoolSlot<TrackedObject>>();
            start.SignalAndWait(cancellationToken);
            for (int round = 0; round < Rounds; round++)
            {
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
                }

                held.Clear();
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(100)), Is.True, "the stress run did not finish");
        Assert.That(violations, Is.Empty);
        Assert.That(slots.Select(slot => slot.IsIdle), Is.All.True, "every slot returned is idle");
        Assert.That(storage.CountIdle(), Is.EqualTo(slots.Length));
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

    /// <summary>What a release or pre-warming does to storage: the slots made idle, nothing else.</summary>
    private static void MakeIdleUnkept(PoolSlot<TrackedObject>[] slots)
    {
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            Assert.That(slot.TryReturnIdle(), Is.True);
        }
    }

    /// <summary>Takes every idle slot from the registry, on the calling thread, which so hints each.</summary>
    private static PoolSlot<TrackedObject>[] ClaimAll(SlotStorage<TrackedObject> storage)
    {
        var claimed = new List<PoolSlot<TrackedObject>>();
        while (storage.TryClaimAny(out PoolSlot<TrackedObject>? slot))
        {
            claimed.Add(slot);
        }

        return [.. claimed];
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
