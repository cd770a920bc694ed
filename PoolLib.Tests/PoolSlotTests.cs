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

        for (int round = 0; round < Rounds; round++)
        {
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            using var start = new Barrier(Threads);
            var racers = Enumerable.Range(0, Threads).Select(_ => Task.Factory.StartNew(() =>
            {
                start.SignalAndWait(cancellationToken);
                try
                {
                    slot.Dispose();
                    Interlocked.Increment(ref winners);
                }
                catch (InvalidOperationException)
                {
                    Interlocked.Increment(ref losers);
                }
            }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

            Assert.That(Task.WaitAll(racers, TimeSpan.FromSeconds(10)), Is.True);
        }

        Assert.That(winners, Is.EqualTo(Rounds));
        Assert.That(losers, Is.EqualTo(Rounds * (Threads - 1)));
        Assert.That(pool.CleanUpCount, Is.EqualTo(Rounds));
        Assert.That(pool.AvailableCount, Is.EqualTo(1));
    }
}
