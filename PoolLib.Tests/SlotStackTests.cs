using System.Collections.Concurrent;
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
        const int Threads = 4;
        const int Slots = 6;
        const int RoundsPerThread = 200_000;
        using var owner = new TrackedPool(Slots);
        var stack = new SlotStack<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = CreateRegistered(stack, owner, Slots);
        foreach (var slot in slots)
        {
            stack.Push(slot);
        }

        var violations = new ConcurrentQueue<string>();
        using var start = new Barrier(Threads);
        var workers = Enumerable.Range(1, Threads).Select(holder => Task.Factory.StartNew(() =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < RoundsPerThread; i++)
            {
                bool gotFirst = stack.TryPop(out PoolSlot<TrackedObject>? first);
                bool gotSecond = stack.TryPop(out PoolSlot<TrackedObject>? second);
                foreach (var slot in new[] { first, second })
                {
                    if (slot is not null && !slot.Object.TryStampHolder(holder))
                    {
                        violations.Enqueue($"slot {slot.StackIndex} popped while another thread held it");
                    }
                }

                foreach (var slot in new[] { first, second })
                {
                    if (slot is not null && slot.Object.TryClearHolder(holder))
                    {
                        stack.Push(slot);
                    }
                }

                int count = stack.Count;
                if (count is < 0 or > Slots)
                {
                    violations.Enqueue($"count {count} outside 0..{Slots}");
                }

                if (!gotFirst && !gotSecond)
                {
                    Thread.Yield();
                }
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(50)), Is.True);
        Assert.That(violations, Is.Empty);
        Assert.That(stack.Count, Is.EqualTo(Slots), "the depth recorded in the top slot after the race");
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
