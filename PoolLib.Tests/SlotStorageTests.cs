using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed class SlotStorageTests
{
    [Test]
    public void TryPopSharedAndRefill_CacheWithRoom_KeepsTheNextHalfOfTheStack()
    {
        using var owner = new TrackedPool(10);
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] onStack) = StorageWithStack(owner, 10);

        bool taken = storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out bool pushedBack);
        var ownTakes = new List<PoolSlot<TrackedObject>?>();
        for (int i = 0; i < 4; i++)
        {
            storage.TryTakeOwn(out PoolSlot<TrackedObject>? own);
            ownTakes.Add(own);
        }

        Assert.That(taken, Is.True);
        Assert.That(popped, Is.SameAs(onStack[^1]));
        Assert.That(pushedBack, Is.False);
        Assert.That(ownTakes, Is.EquivalentTo(onStack.Reverse().Skip(1).Take(4)), "half the stack moved into the cache");
        Assert.That(storage.Count, Is.EqualTo(5));
    }

    // A thread that only takes (a server's receive loop) would park the extra slots in its cache
    // while the threads that return them find the stack empty: it takes one at a time.
    [Test]
    public void TryPopSharedAndRefill_ThreadThatNeverPushed_TakesOnlyOne()
    {
        using var owner = new TrackedPool(10);
        SlotStorage<TrackedObject>? storage = null;
        PoolSlot<TrackedObject>[] onStack = [];
        var pusher = new Thread(() => (storage, onStack) = StorageWithStack(owner, 10));
        pusher.Start();
        pusher.Join();

        bool taken = storage!.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out _);
        bool ownTake = storage.TryTakeOwn(out _);

        Assert.That(taken, Is.True);
        Assert.That(popped, Is.SameAs(onStack[^1]));
        Assert.That(ownTake, Is.False, "nothing was moved into this thread's cache");
        Assert.That(storage.Count, Is.EqualTo(9));
    }

    // A refill that left no room would make the release of the slot taken drain the cache, and a
    // thread renting one object at a time would pop and push a batch on every pair.
    [Test]
    public void TryPopSharedAndRefill_EmptyCache_FillsAllButTheRoomForTheSlotTaken()
    {
        using var owner = new TrackedPool(4 * ThreadSlotCache.Capacity);
        (SlotStorage<TrackedObject> storage, _) = StorageWithStack(owner, 4 * ThreadSlotCache.Capacity);

        storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out _);
        bool keptOnReturn = storage.TryKeepOwn(popped!, Environment.CurrentManagedThreadId);
        int ownTakes = 0;
        while (storage.TryTakeOwn(out _))
        {
            ownTakes++;
        }

        Assert.That(keptOnReturn, Is.True, "the slot taken fits back into the cache");
        Assert.That(ownTakes, Is.EqualTo(ThreadSlotCache.Capacity), "the refill moved Capacity - 1, and the return made it full");
    }

    // A refill credit pays for a batch, not for an attempt: a pop that finds too few slots to move
    // any (at most half the stack is moved) leaves the credit for the next take.
    [Test]
    public void TryPopSharedAndRefill_StackTooShallowForABatch_KeepsTheRefillCredit()
    {
        using var owner = new TrackedPool(11);
        (SlotStorage<TrackedObject> storage, _) = StorageWithStack(owner, 1);
        storage.TryPopSharedAndRefill(out _, out _);
        bool movedFromShallow = storage.TryTakeOwn(out _);
        var pusher = new Thread(() =>
        {
            foreach (PoolSlot<TrackedObject> slot in NewSlots(storage, owner, 10))
            {
                storage.PushShared(slot);
            }
        });
        pusher.Start();
        pusher.Join();

        storage.TryPopSharedAndRefill(out _, out _);
        bool movedFromDeep = storage.TryTakeOwn(out _);

        Assert.That(movedFromShallow, Is.False, "one slot on the stack: nothing to move");
        Assert.That(movedFromDeep, Is.True, "the credit earned by this thread's one push paid for this batch");
    }

    // The slots moved by a take are kept by the same protocol as a release: with the gate closed
    // (a waiter may be queued) they go back onto the shared stack, and the caller is told so,
    // because it then owes waiters a look.
    [Test]
    public void TryPopSharedAndRefill_GateClosed_PushesTheRestBackAndSaysSo()
    {
        using var owner = new TrackedPool(10);
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] onStack) = StorageWithStack(owner, 10);

        storage.EnterForeign();
        bool taken = storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out bool pushedBack);
        var left = new List<PoolSlot<TrackedObject>>();
        while (storage.TryTakeAny(out PoolSlot<TrackedObject>? slot))
        {
            left.Add(slot);
        }

        storage.ExitForeign();

        Assert.That(taken, Is.True);
        Assert.That(popped, Is.SameAs(onStack[^1]));
        Assert.That(pushedBack, Is.True);
        Assert.That(left, Is.EquivalentTo(onStack.SkipLast(1)), "every other slot is stored exactly once");
    }

    [Test]
    public void TryPopSharedAndRefill_CacheFull_TakesOneAndMovesNothing()
    {
        using var owner = new TrackedPool(ThreadSlotCache.Capacity + 10);
        (SlotStorage<TrackedObject> storage, PoolSlot<TrackedObject>[] onStack) = StorageWithStack(owner, 10);
        foreach (PoolSlot<TrackedObject> slot in NewSlots(storage, owner, ThreadSlotCache.Capacity))
        {
            storage.TryKeepOwn(slot, Environment.CurrentManagedThreadId);
        }

        bool taken = storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out bool pushedBack);

        Assert.That(taken, Is.True);
        Assert.That(popped, Is.SameAs(onStack[^1]));
        Assert.That(pushedBack, Is.False);
        Assert.That(storage.Count, Is.EqualTo(ThreadSlotCache.Capacity + onStack.Length - 1));
    }

    /// <summary>
    /// A storage whose shared stack holds <paramref name="count"/> new slots of <paramref name="owner"/>
    /// (the last on top) and whose caches are empty. The slots are pushed by the calling thread, which
    /// so earns <paramref name="count"/> refill credits: its takes from the stack may move batches.
    /// </summary>
    private static (SlotStorage<TrackedObject> Storage, PoolSlot<TrackedObject>[] OnStack) StorageWithStack(TrackedPool owner, int count)
    {
        var storage = new SlotStorage<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = NewSlots(storage, owner, count);
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            storage.PushShared(slot);
        }

        return (storage, slots);
    }

    /// <summary>New slots of <paramref name="owner"/>, registered with <paramref name="storage"/> and marked in-pool, ready to store.</summary>
    private static PoolSlot<TrackedObject>[] NewSlots(SlotStorage<TrackedObject> storage, TrackedPool owner, int count)
    {
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, count).Select(_ => new PoolSlot<TrackedObject>(owner, new TrackedObject()))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            storage.Register(slot);
            slot.MarkInPool();
        }

        return slots;
    }
}
