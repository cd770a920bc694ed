using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// A contended lock throws ThreadInterruptedException on a thread with an interrupt pending. Each
// lock of the pool is held here while a thread with an interrupt pending runs into it: the pool must
// finish what it started (nothing lost, the cap intact) and leave the interrupt for the thread's next wait.
public sealed partial class PoolTests
{
    [Test]
    public void Release_FirstOnItsThreadWithInterruptPendingAndCacheTableContended_StoresTheSlotAndKeepsTheInterrupt()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        // A thread's first release gives it its cache, under the storage's lock.
        (Exception? failure, bool interruptKept) = RunWithInterruptPendingWhileHeld(pool.Storage.Lock, () => pool.Release(slot));

        Assert.That(failure, Is.Null);
        Assert.That(interruptKept, Is.True, "the interrupt is put back for the thread's next wait");
        AssertCounts(pool, total: 1, available: 1);
        Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? again), Is.True);
        Assert.That(again, Is.SameAs(slot));
    }

    [Test]
    public void TakeSlot_InterruptPendingAndRegistryContended_CreatesTheObjectAndKeepsTheInterrupt()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject>? taken = null;

        // A new object's slot is registered under the storage's lock, after the cap's unit is taken.
        (Exception? failure, bool interruptKept) = RunWithInterruptPendingWhileHeld(pool.Storage.Lock, () => taken = pool.TakeSlot());

        Assert.That(failure, Is.Null);
        Assert.That(interruptKept, Is.True);
        Assert.That(taken, Is.Not.Null);
        AssertCounts(pool, total: 1, available: 0);
        pool.Release(taken!);
        Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? again), Is.True, "the object is the pool's");
        Assert.That(again, Is.SameAs(taken));
    }

    [Test]
    public void Release_CleanUpThrowsWithInterruptPendingAndRegistryContended_GivesCapacityBackAndKeepsTheInterrupt()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.OnCleanUp = _ => throw new FormatException("clean-up failed");

        // A discarded object's slot is unregistered under the storage's lock, before its unit goes back.
        (Exception? failure, bool interruptKept) = RunWithInterruptPendingWhileHeld(pool.Storage.Lock, () => pool.Release(slot));

        Assert.That(failure, Is.InstanceOf<FormatException>(), "the clean-up's own exception reaches the releaser");
        Assert.That(interruptKept, Is.True);
        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
        pool.OnCleanUp = null;
        Assert.That(pool.TryTakeSlot(out _), Is.True, "the discarded object's place under the cap came back");
    }

    // A blocked taker sleeps on its own signal; the release that hands it an object wakes it with a
    // pulse whose lock, contended here, meets the releaser's pending interrupt. The pulse must still
    // happen (or the taker sleeps for ever on an object it was handed) and the release must finish.
    [Test]
    [CancelAfter(60_000)]
    public void Release_InterruptPendingAndBlockedTakersSignalContended_WakesTheTakerAndKeepsTheInterrupt(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        PoolSlot<TrackedObject>? handed = null;
        var taker = new Thread(() => handed = pool.TakeSlot());
        taker.Start();
        WaitUntilWaiting(pool, 1);
        Assert.That(
            SpinWait.SpinUntil(() => (taker.ThreadState & ThreadState.WaitSleepJoin) != 0, s_waitBound),
            Is.True,
            "the taker never blocked");

        (Exception? failure, bool interruptKept) = RunWithInterruptPendingWhileHeld(pool.FirstWaiterSignal!, () => pool.Release(held));

        Assert.That(failure, Is.Null);
        Assert.That(interruptKept, Is.True);
        Assert.That(taker.Join(s_waitBound), Is.True, "the taker was handed the object but never woke");
        Assert.That(handed, Is.SameAs(held));
        Assert.That(pool.WaiterCount, Is.Zero);
    }

    // Workers take and release while a controller interrupts them at random: an interrupt may land in
    // a wait, a spin, a contended lock, or in no blocking call at all (and then meets the next one).
    // A clean-up fails now and then, so objects are discarded and made again under the registry's
    // lock. Only a take may end with the interrupt; a release never does. At the end every object is
    // idle, stored once, and the whole cap can be taken at once.
    [Test]
    [CancelAfter(120_000)]
    public void TakeAndRelease_InterruptedAtRandom_LosesNoObjectAndNoCapacity(CancellationToken cancellationToken)
    {
        const int Capacity = 4;
        const int Workers = 6;
        const int PairsPerWorker = 100_000;
        using var pool = new TrackedPool(Capacity);
        pool.OnCleanUp = o =>
        {
            if (o.Id % 7 == 0 && Random.Shared.Next(64) == 0)
            {
                throw new FormatException("clean-up failed");
            }
        };
        var violations = new ConcurrentQueue<string>();
        int interruptedTakes = 0;
        int workersStarted = 0;
        int workersLeft = Workers;
        using var start = new Barrier(Workers + 1);

        void Work(int holder)
        {
            start.SignalAndWait(cancellationToken);
            Interlocked.Increment(ref workersStarted);
            for (int pair = 0; pair < PairsPerWorker; pair++)
            {
                PoolSlot<TrackedObject>? slot;
                try
                {
                    if (pair % 2 == 0)
                    {
                        slot = pool.TakeSlot();
                    }
                    else if (!pool.TryTakeSlot(TimeSpan.FromMilliseconds(50), out slot))
                    {
                        continue;
                    }
                }
                catch (ThreadInterruptedException)
                {
                    Interlocked.Increment(ref interruptedTakes);
                    continue;
                }

                // Held a moment, so that the other workers find the pool exhausted and wait.
                bool stamped = slot.Object.TryStampHolder(holder);
                Thread.SpinWait(20);
                if (!stamped || !slot.Object.TryClearHolder(holder))
                {
                    violations.Enqueue($"object {slot.Object.Id} held by two takers");
                }

                try
                {
                    pool.Release(slot);
                }
                catch (FormatException)
                {
                }
                catch (Exception e)
                {
                    violations.Enqueue($"a release threw {e.GetType().Name}: {e.Message}");
                }
            }

            Interlocked.Decrement(ref workersLeft);
        }

        Thread[] workers = [.. Enumerable.Range(1, Workers).Select(holder => new Thread(() => Work(holder)) { IsBackground = true })];
        foreach (Thread worker in workers)
        {
            worker.Start();
        }

        // The controller runs on the test thread; it yields after each interrupt so workers run on one
        // core too. It starts once every worker is past the start barrier, whose wait is not the pool's.
        start.SignalAndWait(cancellationToken);
        Assert.That(SpinWait.SpinUntil(() => Volatile.Read(ref workersStarted) == Workers, s_waitBound), Is.True, "the workers never started");
        int interrupts = 0;
        while (Volatile.Read(ref workersLeft) > 0)
        {
            cancellationToken.ThrowIfCancellationRequested();
            workers[Random.Shared.Next(Workers)].Interrupt();
            interrupts++;
            Thread.SpinWait(Random.Shared.Next(1, 2_000));
            Thread.Yield();
        }

        foreach (Thread worker in workers)
        {
            Assert.That(worker.Join(s_waitBound), Is.True, "a worker never finished");
        }

        Assert.That(violations, Is.Empty);
        Assert.That(interrupts, Is.GreaterThan(0));
        Assert.That(interruptedTakes, Is.GreaterThan(0), "some interrupts ended a take");
        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(pool.Storage.CountIdle(), Is.EqualTo(pool.TotalCount), "every object is stored exactly once");
        AssertCounts(pool, total: pool.TotalCount, available: pool.TotalCount);
        pool.OnCleanUp = null;
        var all = new List<PoolSlot<TrackedObject>>();
        for (int i = 0; i < Capacity; i++)
        {
            Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot), Is.True, $"take {i + 1} of the cap of {Capacity}");
            all.Add(slot!);
        }

        Assert.That(all.Select(s => s.Object).Distinct().Count(), Is.EqualTo(Capacity));
    }

    /// <summary>
    /// Runs <paramref name="body"/> on a new thread with an interrupt pending while this thread holds
    /// <paramref name="contended"/>, releasing it only once that thread has blocked (on the lock) or ended.
    /// </summary>
    /// <returns>What <paramref name="body"/> threw, and whether the interrupt was still pending after it.</returns>
    private static (Exception? Failure, bool InterruptKept) RunWithInterruptPendingWhileHeld(UninterruptibleLock contended, Action body)
    {
        Exception? failure = null;
        bool interruptKept = false;
        var thread = new Thread(() =>
        {
            Thread.CurrentThread.Interrupt();
            try
            {
                body();
            }
            catch (Exception e)
            {
                failure = e;
            }

            try
            {
                Thread.Sleep(0);
            }
            catch (ThreadInterruptedException)
            {
                interruptKept = true;
            }
        });

        using (contended.EnterScope())
        {
            thread.Start();
            Assert.That(
                SpinWait.SpinUntil(() => (thread.ThreadState & (ThreadState.WaitSleepJoin | ThreadState.Stopped)) != 0, s_waitBound),
                Is.True,
                "the thread neither blocked nor ended");
        }

        Assert.That(thread.Join(s_waitBound), Is.True, "the thread never finished");
        return (failure, interruptKept);
    }
}
