using PoolLib.Internal;

namespace PoolLib.Tests.Internal;

public sealed class SlotHistoryTests
{
    // A late release that lost its claim to a take-back still in flight must not decide before the outcome: read
    // early, the in-flight mark would make it throw into the renter's finally although the rental was taken back.
    [Test]
    [CancelAfter(10_000)]
    public async Task TakenBackRental_TakeBackOfThatRentalInFlight_ReturnsOnlyItsOutcome(CancellationToken cancellationToken)
    {
        const int Rental = 5;
        var history = new SlotHistory(createdAt: 0);
        Volatile.Write(ref history.AbandonedRental, SlotHistory.InFlight(Rental));
        using var reading = new ManualResetEventSlim();
        Task<int> read = Task.Factory.StartNew(
            () =>
            {
                reading.Set();
                return history.TakenBackRental(Rental);
            },
            cancellationToken,
            TaskCreationOptions.LongRunning,
            TaskScheduler.Default);
        reading.Wait(cancellationToken);

        // Time for a read that does not wait to come back; one that waits cannot, whatever the time.
        for (int i = 0; i < 1_000 && !read.IsCompleted; i++)
        {
            Thread.Yield();
        }

        Assert.That(read.IsCompleted, Is.False, "it decided before the take-back's outcome");
        Volatile.Write(ref history.AbandonedRental, Rental);
        Assert.That(await read, Is.EqualTo(Rental));
    }

    [Test]
    public void TakenBackRental_TakeBackOfAnotherRentalInFlight_ReturnsAtOnce()
    {
        var history = new SlotHistory(createdAt: 0);
        Volatile.Write(ref history.AbandonedRental, SlotHistory.InFlight(4));

        Assert.That(history.TakenBackRental(5), Is.EqualTo(SlotHistory.InFlight(4)));
    }
}
