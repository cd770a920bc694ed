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

    // A refill that left no room would make the release of the slot taken push the whole cache, and
    // a thread renting one object at a time would pop and push a batch on every pair.
    [Test]
    public void TryPopSharedAndRefill_EmptyCache_LeavesRoomToKeepTheSlotTaken()
    {
        using var owner = new TrackedPool(4 * ThreadSlotCache.Capacity);
        (SlotStorage<TrackedObject> storage, _) = StorageWithStack(owner, 4 * ThreadSlotCache.Capacity);

        storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out _);
        bool keptOnReturn = storage.TryKeepOwn(popped!);

        Assert.That(keptOnReturn, Is.True, "the slot taken fits back into the cache");
        Assert.That(storage.Count, Is.EqualTo(4 * ThreadSlotCache.Capacity));
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
        for (int i = 0; i < ThreadSlotCache.Capacity; i++)
        {
            var slot = new PoolSlot<TrackedObject>(owner, new TrackedObject());
            storage.Register(slot);
            slot.MarkInPool();
            storage.TryKeepOwn(slot);
        }

        bool taken = storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out bool pushedBack);

        Assert.That(taken, Is.True);
        Assert.That(popped, Is.SameAs(onStack[^1]));
        Assert.That(pushedBack, Is.False);
        Assert.That(storage.Count, Is.EqualTo(ThreadSlotCache.Capacity + onStack.Length - 1));
    }

    /// <summary>A storage whose shared stack holds <paramref name="count"/> new slots of <paramref name="owner"/> (the last on top) and whose caches are empty.</summary>
    private static (SlotStorage<TrackedObject> Storage, PoolSlot<TrackedObject>[] OnStack) StorageWithStack(TrackedPool owner, int count)
    {
        var storage = new SlotStorage<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, count).Select(_ => new PoolSlot<TrackedObject>(owner, new TrackedObject()))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            storage.Register(slot);
            slot.MarkInPool();
            storage.PushShared(slot);
        }

        return (storage, slots);
    }
}
