using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests.Internal;

public sealed class SlotRegistryTests
{
    [Test]
    public void Remove_ThreeQuartersOfTheSlotsGone_CompactsAndKeepsEveryOtherAtItsIndex()
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 1_024).Select(_ => new PoolSlot<TrackedObject>(pool, new TrackedObject()))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            registry.Add(slot, registry.Retirements);
        }

        foreach (PoolSlot<TrackedObject> slot in slots.Where((_, i) => i % 8 != 0))
        {
            registry.Remove(slot);
        }

        PoolSlot<TrackedObject>[] left = [.. slots.Where((_, i) => i % 8 == 0)];
        Assert.That(registry.Count, Is.EqualTo(left.Length));
        Assert.That(registry.Capacity, Is.LessThanOrEqualTo(4 * left.Length), "the array shrank with the slots");
        Assert.That(registry.Slots.ToArray().Where(s => s is not null), Is.EquivalentTo(left));
        Assert.That(left.Select(s => registry.Array[registry.IndexOf(s)]), Is.EqualTo(left), "each slot is where its index says");
    }

    [Test]
    public void Add_AfterRemovals_ReusesAFreedIndex()
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>();
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 3).Select(_ => new PoolSlot<TrackedObject>(pool, new TrackedObject()))];
        foreach (PoolSlot<TrackedObject> slot in slots)
        {
            registry.Add(slot, registry.Retirements);
        }

        registry.Remove(slots[0]);
        var added = new PoolSlot<TrackedObject>(pool, new TrackedObject());
        registry.Add(added, registry.Retirements);

        Assert.That(registry.IndexOf(added), Is.Zero);
        Assert.That(registry.Count, Is.EqualTo(3));
    }

    [Test]
    public void Add_RetireAllBeganSinceTheCountWasRead_RetiresTheSlot()
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>();
        PoolSlot<TrackedObject> before = NewSlot(pool), during = NewSlot(pool), after = NewSlot(pool);
        registry.Add(before, registry.Retirements);
        int retirements = registry.Retirements;

        registry.RetireAll();
        registry.Add(during, retirements);
        registry.Add(after, registry.Retirements);

        Assert.That(before.IsRetired, Is.True, "registered before: the walk retires it");
        Assert.That(during.IsRetired, Is.True, "made while RetireAll ran: the registration retires it");
        Assert.That(after.IsRetired, Is.False, "made afterwards");
    }

    // A walk reads the array once: a length read apart from it could belong to a newer, compacted
    // array, and the walk would then stop short of slots the older array still holds.
    // With a step of 4 entries, each compaction of the 64 slots spans several operations of the churn.
    [Test]
    [CancelAfter(60_000)]
    [TestCase(SlotRegistry<TrackedObject>.DefaultCompactionStep)]
    [TestCase(4)]
    public void Slots_WalkedWhileOtherSlotsComeAndGo_AlwaysHoldsEverySlotThatStaysOnce(int compactionStep, CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>(compactionStep);
        var churn = new List<PoolSlot<TrackedObject>>();
        for (int i = 0; i < 60; i++)
        {
            churn.Add(NewSlot(pool));
            registry.Add(churn[^1], registry.Retirements);
        }

        PoolSlot<TrackedObject>[] staying = [.. Enumerable.Range(0, 4).Select(_ => NewSlot(pool))];
        foreach (PoolSlot<TrackedObject> slot in staying)
        {
            registry.Add(slot, registry.Retirements);
        }

        using var stop = new CancellationTokenSource();
        var changer = Task.Run(() =>
        {
            while (!stop.IsCancellationRequested)
            {
                churn.ForEach(registry.Remove);
                churn.ForEach(slot => registry.Add(slot, registry.Retirements));
            }
        }, cancellationToken);

        int missed = 0;
        for (int walk = 0; walk < 2_000_000 && !changer.IsCompleted; walk++)
        {
            int found = 0;
            foreach (PoolSlot<TrackedObject>? slot in registry.Slots)
            {
                found += slot is not null && Array.IndexOf(staying, slot) >= 0 ? 1 : 0;
            }

            missed += found == staying.Length ? 0 : 1;
        }

        stop.Cancel();
        changer.Wait(cancellationToken);

        Assert.That(missed, Is.Zero, "walks that missed a slot registered throughout, or met one twice");
        AssertConsistent(registry, [.. churn, .. staying]);
    }

    [Test]
    public void Remove_ThreeQuartersGone_CompactsInStepsSpreadOverLaterOperations()
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>(compactionStep: 4);
        List<PoolSlot<TrackedObject>> live = [.. Enumerable.Range(0, 256).Select(_ => NewSlot(pool))];
        live.ForEach(slot => registry.Add(slot, registry.Retirements));

        while (!registry.IsCompacting)
        {
            registry.Remove(live[^1]);
            live.RemoveAt(live.Count - 1);
        }

        Assert.That(registry.Capacity, Is.EqualTo(256), "the array is not replaced by the removal that began the compaction");
        List<PoolSlot<TrackedObject>> older = [.. live];
        int operations = 0;
        for (; registry.IsCompacting; operations++)
        {
            PoolSlot<TrackedObject> added = NewSlot(pool);
            registry.Add(added, registry.Retirements);
            registry.Remove(live[0]);
            older.Remove(live[0]);
            live.RemoveAt(0);
            live.Add(added);
            AssertConsistent(registry, live);
        }

        Assert.That(registry.Capacity, Is.EqualTo(128));
        Assert.That(operations, Is.GreaterThan(1), "the copy was spread over several operations");
        Assert.That(registry.Slots.ToArray().Where(s => s is not null && older.Contains(s)), Is.EqualTo(older), "the slots kept their order");
    }

    // An array of more than 32,768 entries is allocated on the thread pool: no removal allocates 512 KB or more itself.
    [Test]
    [CancelAfter(60_000)]
    public async Task Remove_LargeRegistryThreeQuartersGone_AllocatesTheNewArrayOffTheRemovingThread(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>();
        List<PoolSlot<TrackedObject>> live = [.. Enumerable.Range(0, 131_072).Select(_ => NewSlot(pool))];
        live.ForEach(slot => registry.Add(slot, registry.Retirements));
        while (live.Count > 131_072 / 4)
        {
            registry.Remove(live[^1]);
            live.RemoveAt(live.Count - 1);
        }

        long allocated = GC.GetAllocatedBytesForCurrentThread();
        registry.Remove(live[^1]);
        live.RemoveAt(live.Count - 1);
        Assert.That(GC.GetAllocatedBytesForCurrentThread() - allocated, Is.LessThan(65_536 * 8), "the removal did not allocate the array");

        await Poll.UntilAsync(() => registry.IsCompacting, cancellationToken);
        while (registry.IsCompacting)
        {
            registry.Remove(live[^1]);
            live.RemoveAt(live.Count - 1);
        }

        Assert.That(registry.Capacity, Is.EqualTo(65_536));
        AssertConsistent(registry, live);
    }

    // Every operation is checked, in a seeded run that compacts and grows the registry many times over.
    [Test]
    public void AddAndRemove_InAnyOrderWhileCompacting_EverySlotIsOnceInTheArrayAtItsIndexAndTheOldOnesKeepTheirOrder()
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>(compactionStep: 4);
        var random = new Random(48);
        List<PoolSlot<TrackedObject>> original = [.. Enumerable.Range(0, 512).Select(_ => NewSlot(pool))];
        original.ForEach(slot => registry.Add(slot, registry.Retirements));
        var live = new List<PoolSlot<TrackedObject>>(original);
        int compactions = 0;
        for (int operation = 0; operation < 20_000; operation++)
        {
            int capacity = registry.Capacity;
            bool shrinking = operation % 4_000 < 2_000;
            if (live.Count > 0 && random.Next(10) < (shrinking ? 7 : 3))
            {
                int which = random.Next(live.Count);
                registry.Remove(live[which]);
                original.Remove(live[which]);
                live.RemoveAt(which);
            }
            else
            {
                live.Add(NewSlot(pool));
                registry.Add(live[^1], registry.Retirements);
            }

            compactions += registry.Capacity < capacity ? 1 : 0;
            AssertConsistent(registry, live);
            var stayed = new HashSet<PoolSlot<TrackedObject>>(original);
            Assert.That(registry.Slots.ToArray().Where(s => s is not null && stayed.Contains(s)), Is.EqualTo(original), $"order after operation {operation}");
        }

        Assert.That(compactions, Is.GreaterThan(2));
    }

    /// <summary>Each live slot once in the array, at its index, and nothing else there.</summary>
    private static void AssertConsistent(SlotRegistry<TrackedObject> registry, IReadOnlyCollection<PoolSlot<TrackedObject>> live)
    {
        // Distinct slots at their indices, and as many entries as slots: each once, and nothing else.
        PoolSlot<TrackedObject>?[] array = registry.Array;
        Assert.That(live.All(s => ReferenceEquals(array[registry.IndexOf(s)], s)), Is.True, "each slot is where its index says");
        Assert.That(array.Count(s => s is not null), Is.EqualTo(live.Count), "no other entry");
        Assert.That(registry.Count, Is.EqualTo(live.Count));
    }

    private static PoolSlot<TrackedObject> NewSlot(TrackedPool pool) => new(pool, new TrackedObject());
}
