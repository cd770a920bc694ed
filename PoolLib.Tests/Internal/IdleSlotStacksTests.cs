using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests.Internal;

public sealed class IdleSlotStacksTests
{
    [Test]
    public void TryTake_StaleEntriesAhead_DropsEachOnceAndClaimsTheIdleSlot()
    {
        using var pool = new TrackedPool(3);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 3).Select(_ => IdleSlot(pool, stacks))];

        // Taken since through their takers' hints: their entries are stale.
        Assert.That(slots[1].TryClaimIdle() && slots[2].TryClaimIdle(), Is.True);
        bool sawReturning = false;
        bool taken = stacks.TryTake(out PoolSlot<TrackedObject>? slot, lookEverywhere: true, ref sawReturning);

        Assert.That(taken, Is.True);
        Assert.That(slot, Is.SameAs(slots[0]));
        Assert.That(stacks.EntryCount, Is.Zero, "the stale entries went with the look, each once");
        Assert.That(slots.Select(s => s.Stack), Is.All.Null);
        Assert.That(sawReturning, Is.False);
    }

    [Test]
    public void TryTake_EntryOfASlotStillReturning_KeepsTheEntryAndSaysSo()
    {
        using var pool = new TrackedPool(1);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject> slot = IdleSlot(pool, stacks);
        Assert.That(slot.TryClaimIdle() && slot.TryBeginReturn(), Is.True);

        bool sawReturning = false;
        bool taken = stacks.TryTake(out _, lookEverywhere: true, ref sawReturning);

        Assert.That(taken, Is.False);
        Assert.That(sawReturning, Is.True);
        Assert.That(slot.Stack, Is.Not.Null, "its releaser relies on the entry it saw");
        Assert.That(stacks.EntryCount, Is.EqualTo(1));
    }

    [Test]
    public void Push_SlotWithAnEntryAlready_AddsNoSecond()
    {
        using var pool = new TrackedPool(1);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject> slot = IdleSlot(pool, stacks);

        stacks.Push(slot);

        Assert.That(stacks.EntryCount, Is.EqualTo(1));
    }

    [Test]
    public void Remove_DiscardedSlot_LeavesNoEntryToHoldIt()
    {
        using var pool = new TrackedPool(2);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject> kept = IdleSlot(pool, stacks);
        PoolSlot<TrackedObject> discarded = IdleSlot(pool, stacks);
        Assert.That(discarded.TryClaimIdle(), Is.True);
        discarded.MarkDiscarded();

        IdleSlotStacks<TrackedObject>.Remove(discarded);
        bool sawReturning = false;
        stacks.TryTake(out PoolSlot<TrackedObject>? slot, lookEverywhere: true, ref sawReturning);

        Assert.That(discarded.Stack, Is.Null);
        Assert.That(slot, Is.SameAs(kept));
        Assert.That(stacks.EntryCount, Is.Zero);
    }

    /// <summary>Makes a slot, returns it and pushes its entry, as a release does.</summary>
    private static PoolSlot<TrackedObject> IdleSlot(TrackedPool pool, IdleSlotStacks<TrackedObject> stacks)
    {
        var slot = new PoolSlot<TrackedObject>(pool, new TrackedObject());
        Assert.That(slot.TryBeginReturn(), Is.True);
        slot.Publish();
        stacks.Push(slot);
        return slot;
    }
}
