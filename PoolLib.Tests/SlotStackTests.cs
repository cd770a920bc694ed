using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed class SlotStackTests
{
    [Test]
    public void TryPop_Empty_ReturnsFalse()
    {
        var stack = new SlotStack<TrackedObject>();

        Assert.That(stack.TryPop(out PoolSlot<TrackedObject>? slot), Is.False);
        Assert.That(slot, Is.Null);
    }

    [Test]
    public void TryPop_AfterPushes_ReturnsLastInFirstOut()
    {
        using var owner = new TrackedPool(8);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, 3);

        foreach (var slot in slots)
        {
            stack.Push(slot);
        }

        Assert.That(PopAll(stack), Is.EqualTo(slots.Reverse()));
    }

    [Test]
    public void Count_AfterPushesAndPops_IsTheNumberOfSlotsInTheStack()
    {
        using var owner = new TrackedPool(8);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, 5);
        var counts = new List<int> { stack.Count };

        foreach (var slot in slots)
        {
            stack.Push(slot);
            counts.Add(stack.Count);
        }

        stack.TryPop(out _);
        stack.TryPop(out PoolSlot<TrackedObject>? popped);
        counts.Add(stack.Count);
        stack.Push(popped!);
        counts.Add(stack.Count);

        Assert.That(counts, Is.EqualTo(new[] { 0, 1, 2, 3, 4, 5, 3, 4 }));
    }

    [Test]
    public void PopBatch_Empty_ReturnsNullAndZero()
    {
        var stack = new SlotStack<TrackedObject>();

        Assert.That(stack.PopBatch(ThreadSlotCache.Capacity, out int count), Is.Null);
        Assert.That(count, Is.Zero);
    }

    [TestCase(1, 8, 1)]
    [TestCase(3, 8, 1)]
    [TestCase(10, 8, 5)]
    [TestCase(20, 8, 8)]
    [TestCase(20, 1, 1)]
    public void PopBatch_TakesNewestUpToMaxAndAtMostHalf_LinkedInStackOrder(int pushed, int maxCount, int expected)
    {
        using var owner = new TrackedPool(pushed);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, pushed);
        foreach (var slot in slots)
        {
            stack.Push(slot);
        }

        PoolSlot<TrackedObject>? first = stack.PopBatch(maxCount, out int count);
        List<PoolSlot<TrackedObject>> batch = Batch(stack, first!, count);

        Assert.That(count, Is.EqualTo(expected));
        Assert.That(batch, Is.EqualTo(slots.Reverse().Take(expected)), "the newest, newest first");
        Assert.That(stack.Count, Is.EqualTo(pushed - expected));
        Assert.That(PopAll(stack), Is.EqualTo(slots.Reverse().Skip(expected)), "the rest stay in order");
    }

    [Test]
    public void PushBatch_OntoSlots_PopsLastFirstThenTheBatchNewestFirstThenTheRest()
    {
        using var owner = new TrackedPool(6);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, 6);
        stack.Push(slots[0]);
        stack.Push(slots[1]);

        stack.PushBatch(new object?[] { slots[2], slots[3], slots[4] }, slots[5]);

        Assert.That(stack.Count, Is.EqualTo(6), "the depths recorded by the batch");
        Assert.That(PopAll(stack), Is.EqualTo(slots.Reverse()));
    }

    [Test]
    public void Register_IndexOfUnregisteredSlot_IsReused()
    {
        using var owner = new TrackedPool(8);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, 2);

        stack.Unregister(slots[0]);
        PoolSlot<TrackedObject> replacement = CreateRegistered(stack, owner, 1)[0];
        stack.Push(replacement);
        stack.Push(slots[1]);

        Assert.That(replacement.StackIndex, Is.EqualTo(slots[0].StackIndex));
        Assert.That(PopAll(stack), Is.EqualTo(new[] { slots[1], replacement }));
    }

    // ABA would show as a slot popped by two threads at once, or as slots lost or duplicated: a pop
    // that read the top and its link, then lost the CPU while others popped the top and its link and
    // pushed the top back, must not install the stale link. Popping two and pushing them back in the
    // opposite order makes that interleaving frequent.
    [Test]
    [CancelAfter(60_000)]
    public void PushAndPop_ContendedWithReordering_NoSlotSharedLostOrDuplicatedAndCountExact(CancellationToken cancellationToken)
    {
        RaceOnStack(slotCount: 6, roundsPerThread: 200_000, cancellationToken, (stack, holder, stamp) =>
        {
            bool gotFirst = stack.TryPop(out PoolSlot<TrackedObject>? first);
            bool gotSecond = stack.TryPop(out PoolSlot<TrackedObject>? second);
            foreach (var slot in new[] { first, second })
            {
                if (slot is not null)
                {
                    stamp(slot);
                }
            }

            foreach (var slot in new[] { first, second })
            {
                if (slot is not null && slot.Object.TryClearHolder(holder))
                {
                    stack.Push(slot);
                }
            }

            if (!gotFirst && !gotSecond)
            {
                Thread.Yield();
            }
        });
    }

    // The same race with batches: each thread pops up to three slots with one swap (walking their
    // links), puts back all but the second with the first on top again, above a different link, and
    // only then the second. A batch pop elsewhere that read the first's old links must fail its swap;
    // if it did not, it would take the second while this thread still holds it.
    [Test]
    [CancelAfter(60_000)]
    public void PushBatchAndPopBatch_ContendedWithReordering_NoSlotSharedLostOrDuplicatedAndCountExact(CancellationToken cancellationToken)
    {
        RaceOnStack(slotCount: 12, roundsPerThread: 400_000, cancellationToken, (stack, holder, stamp) =>
        {
            PoolSlot<TrackedObject>? first = stack.PopBatch(3, out int count);
            if (first is null)
            {
                Thread.Yield();
                return;
            }

            List<PoolSlot<TrackedObject>> popped = Batch(stack, first, count);
            popped.ForEach(stamp);
            PoolSlot<TrackedObject>? heldBack = count > 1 ? popped[1] : null;
            object?[] below = count == 3 ? [popped[2]] : [];
            foreach (var slot in popped)
            {
                if (slot != heldBack)
                {
                    slot.Object.TryClearHolder(holder);
                }
            }

            stack.PushBatch(below, popped[0]);
            if (heldBack is not null)
            {
                heldBack.Object.TryClearHolder(holder);
                stack.Push(heldBack);
            }
        });
    }

    /// <summary>
    /// Runs four threads, started together, each doing <paramref name="roundsPerThread"/> rounds of
    /// <paramref name="round"/> (given the stack, its holder number and a stamp that reports a slot
    /// already held) on a stack of <paramref name="slotCount"/> slots, checking the count after every
    /// round; then asserts that no slot was shared, lost or duplicated and that the count is exact.
    /// </summary>
    private static void RaceOnStack(
        int slotCount,
        int roundsPerThread,
        CancellationToken cancellationToken,
        Action<SlotStack<TrackedObject>, int, Action<PoolSlot<TrackedObject>>> round)
    {
        const int Threads = 4;
        using var owner = new TrackedPool(slotCount);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, slotCount);
        foreach (var slot in slots)
        {
            stack.Push(slot);
        }

        var violations = new ConcurrentQueue<string>();
        using var start = new Barrier(Threads);
        var workers = Enumerable.Range(1, Threads).Select(holder => Task.Factory.StartNew(() =>
        {
            void Stamp(PoolSlot<TrackedObject> slot)
            {
                if (!slot.Object.TryStampHolder(holder))
                {
                    violations.Enqueue($"slot {slot.StackIndex} popped while another thread held it");
                }
            }

            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < roundsPerThread; i++)
            {
                round(stack, holder, Stamp);
                int count = stack.Count;
                if (count < 0 || count > slotCount)
                {
                    violations.Enqueue($"count {count} outside 0..{slotCount}");
                }
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(50)), Is.True);
        Assert.That(violations, Is.Empty);
        Assert.That(stack.Count, Is.EqualTo(slotCount), "the depth recorded in the top slot after the race");
        Assert.That(PopAll(stack), Is.EquivalentTo(slots), "every slot is in the stack exactly once");
    }

    private static PoolSlot<TrackedObject>[] CreateRegistered(SlotStack<TrackedObject> stack, TrackedPool owner, int count)
    {
        var slots = new PoolSlot<TrackedObject>[count];
        for (int i = 0; i < count; i++)
        {
            slots[i] = new PoolSlot<TrackedObject>(owner, new TrackedObject());
            stack.Register(slots[i]);
        }

        return slots;
    }

    /// <summary>The <paramref name="count"/> slots of a batch popped with <paramref name="first"/> on top, newest first.</summary>
    private static List<PoolSlot<TrackedObject>> Batch(SlotStack<TrackedObject> stack, PoolSlot<TrackedObject> first, int count)
    {
        var batch = new List<PoolSlot<TrackedObject>> { first };
        while (batch.Count < count)
        {
            batch.Add(stack.NextPopped(batch[^1]));
        }

        return batch;
    }

    private static List<PoolSlot<TrackedObject>> PopAll(SlotStack<TrackedObject> stack)
    {
        var popped = new List<PoolSlot<TrackedObject>>();
        while (stack.TryPop(out PoolSlot<TrackedObject>? slot))
        {
            popped.Add(slot);
        }

        return popped;
    }
}
