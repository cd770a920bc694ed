using System.Collections.Concurrent;
using PoolLib.Internal;
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

    [Test]
    public void Dispose_OnlyOneThreadReleases_KeepsTheBiasUntilAnotherThreadReleases()
    {
        using var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        PoolSlot<TrackedObject> second = pool.TakeSlot();

        // Other threads taking (a waiter handed an object, then a thief) do not release.
        ValueTask<PoolSlot<TrackedObject>> waiting = Task.Run(() => pool.TakeSlotAsync()).Result;
        first.Dispose();
        PoolSlot<TrackedObject> handedOver = waiting.AsTask().Result;
        handedOver.Dispose();
        second.Dispose();
        PoolSlot<TrackedObject> stolen = Task.Run(pool.TakeSlot).Result;
        bool biasedBeforeOtherRelease = !pool.IsReleaserBiasRevoked;
        Task.Run(stolen.Dispose).Wait();

        Assert.That(biasedBeforeOtherRelease, Is.True);
        Assert.That(pool.IsReleaserBiasRevoked, Is.True);
        Assert.Throws<InvalidOperationException>(stolen.Dispose);
        Assert.That(pool.CleanUpCount, Is.EqualTo(4));
        Assert.That(pool.StoredCount, Is.EqualTo(2));
        Assert.That(pool.AvailableCount, Is.EqualTo(2));
    }

    // The pool's first releaser claims the slots it returns with plain writes until another thread
    // releases (ReleaserBias). Each round uses a new pool whose first releaser, the owner, then races
    // a rival to return one rental: in even rounds the rival's release is the one that revokes the
    // bias, in odd rounds the rival revoked it beforehand, so the owner must use the interlocked
    // guard. Either way exactly one of them may return the slot, and storage must hold it once.
    [Test]
    [CancelAfter(60_000)]
    public void Dispose_BiasedOwnerRacedByAnotherThread_ExactlyOneReturnsIt(CancellationToken cancellationToken)
    {
        const int Rounds = 4_000;
        int winners = 0;
        int losers = 0;
        int arrived = 0;
        var violations = new ConcurrentQueue<string>();
        TrackedPool? pool = null;
        PoolSlot<TrackedObject>? contested = null;
        using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        using var phase = new Barrier(2);

        void Race(int round)
        {
            // Spin, not block, so that both releases start within a few hundred nanoseconds; yield
            // after a while, in case the other racer is not running.
            Interlocked.Increment(ref arrived);
            for (int spins = 0; Volatile.Read(ref arrived) < 2 * (round + 1); spins++)
            {
                stop.Token.ThrowIfCancellationRequested();
                if (spins >= 10_000)
                {
                    Thread.Yield();
                }
            }

            DisposeCountingOutcome(contested!, ref winners, ref losers);
        }

        void Owner()
        {
            for (int round = 0; round < Rounds; round++)
            {
                pool = new TrackedPool(2);
                pool.TakeSlot().Dispose();
                phase.SignalAndWait(stop.Token);
                phase.SignalAndWait(stop.Token);
                contested = pool.TakeSlot();
                if (pool.IsReleaserBiasRevoked != (round % 2 == 1))
                {
                    violations.Enqueue($"round {round}: the bias is {(pool.IsReleaserBiasRevoked ? "revoked" : "held")} before the race");
                }

                phase.SignalAndWait(stop.Token);
                Race(round);
                phase.SignalAndWait(stop.Token);

                int releases = round % 2 == 0 ? 2 : 3;
                if (!pool.IsReleaserBiasRevoked || pool.CleanUpCount != releases || pool.StoredCount != pool.TotalCount || pool.AvailableCount != pool.TotalCount)
                {
                    violations.Enqueue($"round {round}: revoked {pool.IsReleaserBiasRevoked}, {pool.CleanUpCount} clean-ups for {releases} releases, {pool.StoredCount} stored of {pool.TotalCount}");
                }

                pool.Dispose();
            }
        }

        void Rival()
        {
            for (int round = 0; round < Rounds; round++)
            {
                phase.SignalAndWait(stop.Token);
                if (round % 2 == 1)
                {
                    pool!.TakeSlot().Dispose();
                }

                phase.SignalAndWait(stop.Token);
                phase.SignalAndWait(stop.Token);
                Race(round);
                phase.SignalAndWait(stop.Token);
            }
        }

        // A racer that fails stops the other, which would otherwise wait for it at the barrier.
        Task Start(Action racer) => Task.Factory.StartNew(() =>
        {
            try
            {
                racer();
            }
            catch (OperationCanceledException) when (stop.IsCancellationRequested)
            {
            }
            catch (Exception e)
            {
                violations.Enqueue($"{racer.Method.Name}: {e.GetType().Name}: {e.Message}");
                stop.Cancel();
            }
        }, CancellationToken.None, TaskCreationOptions.LongRunning, TaskScheduler.Default);

        Task[] racers = [Start(Owner), Start(Rival)];

        Assert.That(Task.WaitAll(racers, TimeSpan.FromSeconds(50)), Is.True);
        Assert.That(violations, Is.Empty);
        Assert.That(winners, Is.EqualTo(Rounds));
        Assert.That(losers, Is.EqualTo(Rounds));
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
