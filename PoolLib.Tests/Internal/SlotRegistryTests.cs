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
            registry.Add(slot);
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
            registry.Add(slot);
        }

        registry.Remove(slots[0]);
        var added = new PoolSlot<TrackedObject>(pool, new TrackedObject());
        registry.Add(added);

        Assert.That(added.Index, Is.Zero);
        Assert.That(registry.Slots.Length, Is.EqualTo(3));
    }
}
