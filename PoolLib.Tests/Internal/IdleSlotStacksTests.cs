using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests.Internal;

public sealed class IdleSlotStacksTests
{
    private static readonly TimeSpan s_waitBound = TimeSpan.FromSeconds(20);

    [Test]
    public void TryTake_StaleEntriesAhead_DropsEachOnceAndClaimsTheIdleSlot()
    {
        using var pool = new TrackedPool(3);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 3).Select(_ => IdleSlot(pool, stacks))];

        // Taken since through their takers' hints: their entries are stale.
        Assert.That(slots[1].TryClaimIdle() && slots[2].TryClaimIdle(), Is.True);
        bool sawReturning = false;
        int budget = int.MaxValue;
        bool taken = stacks.TryTake(out PoolSlot<TrackedObject>? slot, lookEverywhere: true, ref sawReturning, ref budget);

        Assert.That(taken, Is.True);
        Assert.That(slot, Is.SameAs(slots[0]));
        Assert.That(stacks.EntryCount, Is.Zero, "the stale entries went with the look, each once");
        Assert.That(slots.Select(s => s.Stack), Is.All.Null);
        Assert.That(sawReturning, Is.False);
    }

    [Test]
    public void TryTake_BudgetRunsOutAmongStaleEntries_GivesUpAndLeavesTheRest()
    {
        // One stack, so that the order of the entries is known: newest first.
        using var pool = new TrackedPool(10);
        var stack = new IdleSlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 10).Select(_ => new PoolSlot<TrackedObject>(pool, new TrackedObject()))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            Assert.That(slot.TryBeginReturn(), Is.True);
            slot.Publish();
            stack.Push(slot);
        }

        Assert.That(slots.Skip(1).All(slot => slot.TryClaimIdle()), Is.True, "all stale but the oldest");

        bool sawReturning = false;
        int budget = 4;
        bool taken = stack.TryTake(out _, ref sawReturning, ref budget);

        Assert.That(taken, Is.False);
        Assert.That(budget, Is.Negative);
        Assert.That(stack.Count, Is.EqualTo(6), "the four it looked at went; the rest, the idle slot's too, stay");
        Assert.That(slots[0].Stack, Is.SameAs(stack));
    }

    [Test]
    public void TryTake_EntryOfASlotStillReturning_KeepsTheEntryAndSaysSo()
    {
        using var pool = new TrackedPool(1);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject> slot = IdleSlot(pool, stacks);
        Assert.That(slot.TryClaimIdle() && slot.TryBeginReturn(), Is.True);

        bool sawReturning = false;
        int budget = int.MaxValue;
        bool taken = stacks.TryTake(out _, lookEverywhere: true, ref sawReturning, ref budget);

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
        int budget = int.MaxValue;
        stacks.TryTake(out PoolSlot<TrackedObject>? slot, lookEverywhere: true, ref sawReturning, ref budget);

        Assert.That(discarded.Stack, Is.Null);
        Assert.That(slot, Is.SameAs(kept));
        Assert.That(stacks.EntryCount, Is.Zero);
    }

    // A release publishes with a plain store and then reads the mark, so on another core it may read the mark before
    // its store is seen: the look must not drop the entry of a slot that turns idle between two of its reads.
    [Test]
    [CancelAfter(120_000)]
    public void TryTake_RacingAReleaseThatSawTheEntry_LeavesNoIdleSlotWithoutOne(CancellationToken cancellationToken)
    {
        // The race needs two cores; on one, the rounds only prove that the look and the release still agree.
        int rounds = Environment.ProcessorCount > 1 ? 3_000_000 : 20_000;
        using var pool = new TrackedPool(1);
        var stacks = new IdleSlotStacks<TrackedObject>();
        PoolSlot<TrackedObject> slot = IdleSlot(pool, stacks);
        int round = 0;
        int go = 0;
        int released = 0;
        TestThread releaser = TestThread.Start(() =>
        {
            var jitter = new Random(1);
            for (int i = 1; i <= rounds; i++)
            {
                // Taken through this thread's hints: the entry stays, and the release will find it.
                if (!slot.TryClaimIdle())
                {
                    throw new InvalidOperationException("the slot was not idle");
                }

                Volatile.Write(ref round, i);
                SpinUntil(ref go, i, cancellationToken);
                Thread.SpinWait(jitter.Next(40));
                Release(slot, stacks);
                Volatile.Write(ref released, i);
                SpinUntil(ref round, -i, cancellationToken);
            }
        });

        int lost = 0;
        int taken = 0;
        int returning = 0;
        var jitter = new Random(2);
        for (int i = 1; i <= rounds; i++)
        {
            SpinUntil(ref round, i, cancellationToken);
            Volatile.Write(ref go, i);
            Thread.SpinWait(jitter.Next(40));
            bool sawReturning = false;
            int budget = int.MaxValue;
            bool took = stacks.TryTake(out PoolSlot<TrackedObject>? claimed, lookEverywhere: true, ref sawReturning, ref budget);
            SpinUntil(ref released, i, cancellationToken);
            taken += took ? 1 : 0;
            returning += sawReturning ? 1 : 0;
            if (took)
            {
                Release(claimed!, stacks);
            }
            else if (slot.IsIdle && slot.Stack is null)
            {
                lost++;
                stacks.Push(slot);
            }

            Volatile.Write(ref round, -i);
        }

        Assert.That(releaser.Join(s_waitBound), Is.True, "the releaser never finished");
        Assert.That(lost, Is.Zero, $"idle slots left without an entry in {rounds} rounds ({taken} taken by the look, {returning} seen returning)");
    }

    /// <summary>Ends a rental as Pool.Release does: claims the return, cleans up (a short spin, here), publishes, then
    /// pushes an entry if it sees none.</summary>
    private static void Release(PoolSlot<TrackedObject> slot, IdleSlotStacks<TrackedObject> stacks)
    {
        if (!slot.TryBeginReturn())
        {
            throw new InvalidOperationException("the slot was not rented");
        }

        Thread.SpinWait(8);
        slot.Publish();
        if (slot.Stack is null)
        {
            stacks.Push(slot);
        }
    }

    /// <summary>Waits for the other thread to write <paramref name="value"/>, spinning tight at first so that the two
    /// meet within nanoseconds, then yielding, so that it also goes on when both share one core.</summary>
    private static void SpinUntil(ref int field, int value, CancellationToken cancellationToken)
    {
        for (int spin = Environment.ProcessorCount > 1 ? 10_000 : 0; spin > 0; spin--)
        {
            if (Volatile.Read(ref field) == value)
            {
                return;
            }
        }

        while (Volatile.Read(ref field) != value)
        {
            cancellationToken.ThrowIfCancellationRequested();
            Thread.Yield();
        }
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
