using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests.Internal;

public sealed class ThreadHintsTests
{
    [Test]
    public void Hint_Full_DropsTheOlderHalfSoTheNewestIsTriedFirst()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject>?[] slots = [.. Enumerable.Range(0, 10).Select(i => IdleSlot(pool, i))];
        var hints = new ThreadHints<TrackedObject>(leakSamplingInterval: 0);
        for (int i = 0; i < 8; i++)
        {
            hints.Hint(i, maxLength: 8);
        }

        hints.Hint(9, maxLength: 8);
        bool taken = hints.TryTake(slots, out PoolSlot<TrackedObject>? slot);

        Assert.That(taken, Is.True);
        Assert.That(slot, Is.SameAs(slots[9]));
    }

    [Test]
    public void TryTake_NewestHeldElsewhere_TakesNoneUntilItIsBack()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject>?[] slots = [.. Enumerable.Range(0, 2).Select(i => IdleSlot(pool, i))];
        var hints = new ThreadHints<TrackedObject>(leakSamplingInterval: 0);
        hints.Hint(0, maxLength: 8);
        hints.Hint(1, maxLength: 8);
        Assert.That(slots[1]!.TryClaimIdle(), Is.True);

        bool taken = hints.TryTake(slots, out _);

        Assert.That(taken, Is.False, "in the middle of a long rental the thread looks no further than its newest");
    }

    private static PoolSlot<TrackedObject> IdleSlot(TrackedPool pool, int index)
    {
        var slot = new PoolSlot<TrackedObject>(pool, new TrackedObject()) { Index = index };
        Assert.That(slot.TryBeginReturn(), Is.True);
        slot.Publish();
        return slot;
    }
}
