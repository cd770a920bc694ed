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
        Assert.That(left.Select(s => registry.Array[s.Index]), Is.EqualTo(left), "each slot is where its index says");
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

        Assert.That(added.Index, Is.Zero);
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
    [Test]
    [CancelAfter(60_000)]
    public void Slots_WalkedWhileOtherSlotsComeAndGo_AlwaysHoldsEverySlotThatStays(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        var registry = new SlotRegistry<TrackedObject>();
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

        Assert.That(missed, Is.Zero, "walks that missed a slot registered throughout");
    }

    private static PoolSlot<TrackedObject> NewSlot(TrackedPool pool) => new(pool, new TrackedObject());
}
