using System.Collections.Concurrent;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// The pool's invariants, checked under contention:
// 1. no object is held by two takers at once (each holder stamps the object and must find it free);
// 2. never more objects alive at once than MaxCapacity, as the objects themselves count it;
// 3. once everyone has released: AvailableCount == TotalCount, every object is stored exactly once,
//    and CleanUp ran once per release.
public sealed partial class PoolTests
{
    private const int StressThreads = 4;
    private const int StressOperationsPerThread = 100_000;

    [TestCase(1)]
    [TestCase(2)]
    [TestCase(8)]
    [CancelAfter(120_000)]
    public void TakeSlot_FourThreadsHundredThousandPairsEach_InvariantsHold(int maxCapacity, CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(maxCapacity);

        StressResult result = Stress(pool, cancellationToken, (worker, i) =>
        {
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            return slot;
        });

        AssertStressInvariants(pool, result, releases: StressThreads * StressOperationsPerThread);
    }

    [TestCase(1)]
    [TestCase(2)]
    [TestCase(8)]
    [CancelAfter(120_000)]
    public void EveryTakeKind_FourThreadsHundredThousandPairsEach_InvariantsHold(int maxCapacity, CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(maxCapacity);

        StressResult result = Stress(pool, cancellationToken, (worker, i) =>
        {
            switch (i % 4)
            {
                case 0:
                    return pool.TakeSlot();
                case 1:
                    return pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? timed) ? timed : null;
                case 2:
                    ValueTask<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancellationToken);
                    return take.IsCompletedSuccessfully ? take.Result : take.AsTask().GetAwaiter().GetResult();
                default:
                    return pool.TryTakeSlot(out PoolSlot<TrackedObject>? immediate) ? immediate : null;
            }
        });

        AssertStressInvariants(pool, result, releases: result.Releases);
    }

    // Long rentals: each worker takes up to 24 objects before it releases them, so threads' caches
    // grow and their hints go stale as other workers claim the slots from the registry, while the
    // pool is now and then exhausted (4 x 24 > 93) and takers wait. 93 = 4 x 23 + 1 is the least
    // capacity with which four workers cannot all wait while holding everything.
    [Test]
    [CancelAfter(120_000)]
    public void TakeSlot_FourThreadsTakingUpToTwentyFourBeforeReleasing_InvariantsHold(CancellationToken cancellationToken)
    {
        const int MaxRental = 24;
        const int Rentals = 20_000;
        using var pool = new TrackedPool(StressThreads * (MaxRental - 1) + 1);
        static int RentalLength(int worker, int rental) => 1 + ((rental * 7) + (worker * 3)) % MaxRental;

        StressResult result = Stress(pool, cancellationToken, (worker, i) => pool.TakeSlot(), rentalLength: RentalLength, rentals: Rentals);

        int expected = Enumerable.Range(0, StressThreads).Sum(worker => Enumerable.Range(0, Rentals).Sum(rental => RentalLength(worker, rental)));
        AssertStressInvariants(pool, result, releases: expected);
    }

    [Test]
    [CancelAfter(120_000)]
    public void Release_CleanUpFailingNowAndThenUnderContention_NeverLeaksCapacity(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(4);
        int cleanUps = 0;
        pool.OnCleanUp = _ =>
        {
            if (Interlocked.Increment(ref cleanUps) % 97 == 0)
            {
                throw new FormatException("clean-up failed");
            }
        };

        StressResult result = Stress(pool, cancellationToken, (worker, i) => pool.TakeSlot());

        Assert.That(result.FailedReleases, Is.EqualTo(cleanUps / 97));
        var discarded = pool.Created.Where(o => o.DisposeCount > 0).ToList();
        Assert.That(discarded, Has.Count.EqualTo(result.FailedReleases));
        Assert.That(discarded.Select(o => o.DisposeCount), Is.All.EqualTo(1));
        Assert.That(pool.PeakLiveCount, Is.LessThanOrEqualTo(pool.MaxCapacity), "never more objects alive at once than the cap");
        Assert.That(result.Violations, Is.Empty);
        Assert.That(pool.AvailableCount, Is.EqualTo(pool.TotalCount));
        Assert.That(IdleSlotCount(pool), Is.EqualTo(pool.TotalCount), "storage, uncapped, holds each object once");
        Assert.That(pool.TotalCount, Is.EqualTo(pool.CreatedCount - result.FailedReleases));
    }

    /// <summary>
    /// Runs <see cref="StressThreads"/> threads, started together, each renting <paramref name="rentals"/>
    /// times: taking <paramref name="rentalLength"/> objects (one if not given) with <paramref name="take"/>
    /// (null: nothing taken that time), then releasing them, alternating <see cref="Pool{T}.Release"/>
    /// and <see cref="PoolSlot{T}.Dispose"/>; each holder stamps what it takes, to catch an object held twice.
    /// </summary>
    // AvailableCount is the sum of per-thread balances: each idle slot counted by the thread that published it and
    // uncounted by the one that claimed it. Threads release each other's objects, discard some and trim, so a
    // publication or a claim on any path that a thread failed to count leaves the sum off once all is quiet.
    [Test]
    [CancelAfter(120_000)]
    public void AvailableCount_ThreadsReleasingEachOthersObjectsDiscardingAndTrimming_EqualsIdleSlotsOnceQuiet(CancellationToken cancellationToken)
    {
        const int Iterations = 20_000;
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 16, MinIdle = 2 });
        var handedOver = new ConcurrentQueue<PoolSlot<TrackedObject>>();
        using var start = new Barrier(StressThreads);

        Task[] workers = [.. Enumerable.Range(0, StressThreads).Select(worker => Task.Factory.StartNew(() =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < Iterations && !cancellationToken.IsCancellationRequested; i++)
            {
                if (handedOver.TryDequeue(out PoolSlot<TrackedObject>? other))
                {
                    pool.Release(other);
                }

                if (!pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? slot))
                {
                    continue;
                }

                switch ((i + worker) % 5)
                {
                    case 0 or 1:
                        handedOver.Enqueue(slot);
                        break;
                    case 2 when i % 89 == 0:
                        slot.Discard();
                        break;
                    case 3 when i % 97 == 0:
                        pool.Release(slot);
                        pool.Trim();
                        break;
                    default:
                        pool.Release(slot);
                        break;
                }
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))];
        Assert.That(Task.WaitAll(workers, s_waitBound * 5), Is.True);
        while (handedOver.TryDequeue(out PoolSlot<TrackedObject>? left))
        {
            pool.Release(left);
        }

        Assert.That(pool.AvailableCount, Is.EqualTo(IdleSlotCount(pool)));
        Assert.That(pool.AvailableCount, Is.EqualTo(pool.TotalCount));
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        Assert.That(pool.AvailableCount, Is.EqualTo(pool.TotalCount - 1));
        pool.Release(held);
    }

    private static StressResult Stress(
        TrackedPool pool,
        CancellationToken cancellationToken,
        Func<int, int, PoolSlot<TrackedObject>?> take,
        Func<int, int, int>? rentalLength = null,
        int rentals = StressOperationsPerThread)
    {
        var violations = new ConcurrentQueue<string>();
        int releases = 0;
        int failedReleases = 0;
        using var start = new Barrier(StressThreads + 1); // the workers and this thread

        var workers = StartWorkers(StressThreads, worker =>
        {
            int holder = worker + 1;
            var held = new List<(PoolSlot<TrackedObject> Slot, bool Stamped)>();
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < rentals; i++)
            {
                held.Clear();
                int length = rentalLength?.Invoke(worker, i) ?? 1;
                for (int j = 0; j < length; j++)
                {
                    if (take(worker, i) is not { } slot)
                    {
                        continue;
                    }

                    bool stamped = slot.Object.TryStampHolder(holder);
                    if (!stamped)
                    {
                        violations.Enqueue($"object {slot.Object.Id} handed to worker {holder} while held by another");
                    }

                    held.Add((slot, stamped));
                }

                for (int j = 0; j < held.Count; j++)
                {
                    (PoolSlot<TrackedObject> slot, bool stamped) = held[j];
                    if (stamped && !slot.Object.TryClearHolder(holder))
                    {
                        violations.Enqueue($"object {slot.Object.Id} changed holder while worker {holder} held it");
                    }

                    try
                    {
                        if ((i + j) % 2 == 0)
                        {
                            pool.Release(slot);
                        }
                        else
                        {
                            slot.Dispose();
                        }

                        Interlocked.Increment(ref releases);
                    }
                    catch (FormatException)
                    {
                        Interlocked.Increment(ref failedReleases);
                    }
                }
            }
        });

        start.SignalAndWait(cancellationToken);
        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(100)), Is.True, "the stress run did not finish");
        return new StressResult(violations.ToArray(), releases, failedReleases);
    }

    private static void AssertStressInvariants(TrackedPool pool, StressResult result, int releases)
    {
        Assert.That(result.Violations, Is.Empty);
        Assert.That(result.Releases, Is.EqualTo(releases));
        Assert.That(pool.CleanUpCount, Is.EqualTo(releases), "CleanUp runs once per release");
        Assert.That(pool.WaiterCount, Is.Zero);
        Assert.That(pool.PeakLiveCount, Is.InRange(1, pool.MaxCapacity), "never more objects alive at once than the cap");
        Assert.That(pool.TotalCount, Is.EqualTo(pool.CreatedCount), "nothing was discarded");
        AssertCounts(pool, total: pool.TotalCount, available: pool.TotalCount);

        var stored = new List<TrackedObject>();
        while (stored.Count < pool.CreatedCount && pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot))
        {
            stored.Add(slot.Object);
        }

        Assert.That(stored, Is.EquivalentTo(pool.Created), "every object is stored exactly once");
        Assert.That(pool.CreatedCount, Is.EqualTo(pool.TotalCount), "draining the store created nothing");
    }

    private sealed record StressResult(string[] Violations, int Releases, int FailedReleases);

    // A pool without a clean-up makes a slot idle with one swap; every kind of take, with waits that
    // time out or are cancelled, and discards, races it here. A lost wake-up shows as a bounded take
    // that waits out its bound.
    [TestCase(1)]
    [TestCase(2)]
    [CancelAfter(120_000)]
    public void EveryTakeKind_PoolWithoutCleanUpWithTimeoutsCancellationsAndDiscards_InvariantsHold(int maxCapacity, CancellationToken cancellationToken)
    {
        const int PairsPerWorker = 30_000;
        var created = new ConcurrentQueue<TrackedObject>();
        using Pool<TrackedObject> pool = Pool.Create(maxCapacity, () =>
        {
            var made = new TrackedObject();
            created.Enqueue(made);
            return made;
        });
        var violations = new ConcurrentQueue<string>();
        using var start = new Barrier(StressThreads);
        Task[] workers = StartWorkers(StressThreads, worker =>
        {
            int holder = worker + 1;
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < PairsPerWorker && violations.IsEmpty; i++)
            {
                PoolSlot<TrackedObject>? slot = TakeOneOfEveryKind(pool, i, violations, cancellationToken);
                if (slot is null)
                {
                    continue;
                }

                if (!slot.Object.TryStampHolder(holder) || !slot.Object.TryClearHolder(holder))
                {
                    violations.Enqueue($"object {slot.Object.Id} held by two takers at once");
                }

                if (i % 53 == 0)
                {
                    slot.Discard();
                }
                else
                {
                    pool.Release(slot);
                }
            }
        });

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(100)), Is.True, "the stress run did not finish");
        Assert.That(violations, Is.Empty);
        Assert.That(created.Count(made => made.DisposeCount == 0), Is.EqualTo(pool.TotalCount), "every object not discarded is still the pool's");
        Assert.That(pool.WaiterCount, Is.Zero);
        AssertCounts(pool, total: pool.TotalCount, available: pool.TotalCount);
    }

    /// <summary>One take of the kind <paramref name="i"/> picks; null when it timed out, was cancelled or found nothing, as it may.</summary>
    private static PoolSlot<TrackedObject>? TakeOneOfEveryKind(Pool<TrackedObject> pool, int i, ConcurrentQueue<string> violations, CancellationToken cancellationToken)
    {
        switch (i % 5)
        {
            case 0:
                return pool.TryTakeSlot(out PoolSlot<TrackedObject>? immediate) ? immediate : null;
            case 1:
                return pool.TryTakeSlot(TimeSpan.FromMilliseconds(i % 2), out PoolSlot<TrackedObject>? brief) ? brief : null;
            case 2:
                using (var cancel = new CancellationTokenSource())
                {
                    ValueTask<PoolSlot<TrackedObject>> take = pool.TakeSlotAsync(cancel.Token);
                    cancel.Cancel();
                    try
                    {
                        return take.AsTask().GetAwaiter().GetResult();
                    }
                    catch (OperationCanceledException)
                    {
                        return null;
                    }
                }

            case 3:
                Task<PoolSlot<TrackedObject>> waited = pool.TakeSlotAsync(cancellationToken).AsTask();
                if (!waited.Wait(s_waitBound, cancellationToken))
                {
                    violations.Enqueue("an asynchronous take waited out its bound: a wake-up was lost");
                    return null;
                }

                return waited.Result;
            default:
                if (!pool.TryTakeSlot(s_waitBound, out PoolSlot<TrackedObject>? bounded))
                {
                    violations.Enqueue("a bounded take waited out its bound: a wake-up was lost");
                }

                return bounded;
        }
    }
}
