using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed class SlotStorageTests
{
    // A batch popped for a thread whose cache cannot keep it (here: already full) goes back onto the
    // shared stack, and the caller is told so, because it then owes waiters a look.
    [Test]
    public void TryPopSharedAndRefill_OwnCacheFull_PushesTheRestBackAndSaysSo()
    {
        const int OnStack = 10;
        using var owner = new TrackedPool(ThreadSlotCache.Capacity + OnStack);
        var storage = new SlotStorage<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, ThreadSlotCache.Capacity + OnStack).Select(_ => new PoolSlot<TrackedObject>(owner, new TrackedObject()))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            storage.Register(slot);
            slot.MarkInPool();
        }

        bool[] kept = [.. slots.Take(ThreadSlotCache.Capacity).Select(storage.TryKeepOwn)];
        foreach (PoolSlot<TrackedObject> slot in slots.Skip(ThreadSlotCache.Capacity))
        {
            storage.PushShared(slot);
        }

        bool taken = storage.TryPopSharedAndRefill(out PoolSlot<TrackedObject>? popped, out bool pushedBack);

        Assert.That(kept, Is.All.True, "the cache was filled");
        Assert.That(taken, Is.True);
        Assert.That(popped, Is.SameAs(slots[^1]), "the newest slot on the stack");
        Assert.That(pushedBack, Is.True);
        Assert.That(storage.Count, Is.EqualTo(slots.Length - 1));
        var left = new List<PoolSlot<TrackedObject>>();
        storage.EnterForeign();
        while (storage.TryTakeAny(out PoolSlot<TrackedObject>? slot))
        {
            left.Add(slot);
        }

        storage.ExitForeign();
        Assert.That(left, Is.EquivalentTo(slots.SkipLast(1)), "every other slot is stored exactly once");
    }
}
