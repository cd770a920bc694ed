using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed class PoolSlotTests
{
    [Test]
    public void Object_IsTheObjectTheConstructorMade()
    {
        using var pool = new TrackedPool(1);

        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        Assert.That(pool.Created.Single(), Is.SameAs(slot.Object));
    }

    [Test]
    public void Dispose_RentedSlot_ReturnsItToItsPool()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        slot.Dispose();

        Assert.That(pool.AvailableCount, Is.EqualTo(1));
        Assert.That(pool.CleanUpCount, Is.EqualTo(1));
    }

    [Test]
    public void Dispose_Twice_ThrowsAndLeavesPoolUnchanged()
    {
        using var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        slot.Dispose();

        Assert.Throws<InvalidOperationException>(slot.Dispose);

        Assert.That(pool.AvailableCount, Is.EqualTo(1));
        Assert.That(pool.TotalCount, Is.EqualTo(1));
        Assert.That(pool.CleanUpCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(30_000)]
    public void Dispose_RacedByManyThreads_ExactlyOneReturnsIt(CancellationToken cancellationToken)
    {
        const int Threads = 4;
        const int Rounds = 2_000;
        using var pool = new TrackedPool(1);
        int winners = 0;
        int losers = 0;
        PoolSlot<TrackedObject>? current = null;

        // Each phase of the barrier is one round: its post-phase action rents the slot that all racers
        // then try to return at once; the next phase starts only when every racer has tried.
        using var round = new Barrier(Threads, _ => current = pool.TakeSlot());
        var racers = Enumerable.Range(0, Threads).Select(_ => Task.Factory.StartNew(() =>
        {
            for (int i = 0; i < Rounds; i++)
            {
                round.SignalAndWait(cancellationToken);
                DisposeCountingOutcome(current!, ref winners, ref losers);
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

        Assert.That(Task.WaitAll(racers, TimeSpan.FromSeconds(25)), Is.True);
        Assert.That(winners, Is.EqualTo(Rounds));
        Assert.That(losers, Is.EqualTo(Rounds * (Threads - 1)));
        Assert.That(pool.CleanUpCount, Is.EqualTo(Rounds));
        Assert.That(pool.AvailableCount, Is.EqualTo(1));
    }

    /// <summary>Disposes a slot that other threads may be disposing too, counting whether this call returned it or was refused.</summary>
    private static void DisposeCountingOutcome(PoolSlot<TrackedObject> slot, ref int winners, ref int losers)
    {
        try
        {
            slot.Dispose();
            Interlocked.Increment(ref winners);
        }
        catch (InvalidOperationException)
        {
            Interlocked.Increment(ref losers);
        }
    }
}
