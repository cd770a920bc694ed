namespace PoolLib.Tests;

public sealed class LockFreeSemaphoreTests
{
    [TestCase(0)]
    [TestCase(-1)]
    public void Constructor_MaxCountBelowOne_Throws(int maxCount)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => new LockFreeSemaphore(0, maxCount));

        Assert.That(exception!.ParamName, Is.EqualTo("maxCount"));
    }

    [Test]
    public void Constructor_NegativeInitialCount_Throws()
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => new LockFreeSemaphore(-1, 4));

        Assert.That(exception!.ParamName, Is.EqualTo("initialCount"));
    }

    [Test]
    public void Constructor_InitialCountAboveMax_Throws()
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => new LockFreeSemaphore(5, 4));

        Assert.That(exception!.ParamName, Is.EqualTo("initialCount"));
    }

    [Test]
    public void Constructor_ValidCounts_ExposesThem()
    {
        var semaphore = new LockFreeSemaphore(3, 4);

        Assert.That(semaphore.CurrentCount, Is.EqualTo(3));
        Assert.That(semaphore.MaxCount, Is.EqualTo(4));
    }

    [Test]
    public void TryTake_UnitsAvailable_TakesOneEachUntilZero()
    {
        var semaphore = new LockFreeSemaphore(2, 2);

        Assert.That(semaphore.TryTake(), Is.True);
        Assert.That(semaphore.TryTake(), Is.True);
        Assert.That(semaphore.TryTake(), Is.False);
        Assert.That(semaphore.CurrentCount, Is.Zero);
    }

    [Test]
    public void Release_BelowMax_AddsOne()
    {
        var semaphore = new LockFreeSemaphore(0, 2);

        semaphore.Release();

        Assert.That(semaphore.CurrentCount, Is.EqualTo(1));
    }

    [Test]
    public void Release_AtMax_ThrowsSemaphoreFullAndLeavesCountUnchanged()
    {
        var semaphore = new LockFreeSemaphore(2, 2);

        Assert.Throws<SemaphoreFullException>(semaphore.Release);

        Assert.That(semaphore.CurrentCount, Is.EqualTo(2));
    }

    [Test]
    [CancelAfter(30_000)]
    public void TakeAndRelease_ContendedByManyThreads_NeverExceedsBoundsAndEndsExact(CancellationToken cancellationToken)
    {
        const int MaxCount = 3;
        const int Threads = 8;
        const int OperationsPerThread = 100_000;
        var semaphore = new LockFreeSemaphore(MaxCount, MaxCount);
        int holders = 0;
        int maxHolders = 0;
        int outOfBounds = 0;
        using var start = new Barrier(Threads + 1);
        using var workersDone = new CountdownEvent(Threads);

        var observer = Task.Run(() =>
        {
            start.SignalAndWait(cancellationToken);
            while (!workersDone.IsSet)
            {
                int count = semaphore.CurrentCount;
                if (count is < 0 or > MaxCount)
                {
                    Interlocked.Increment(ref outOfBounds);
                }
            }
        }, cancellationToken);

        var workers = Enumerable.Range(0, Threads).Select(_ => Task.Factory.StartNew(() =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < OperationsPerThread; i++)
            {
                if (!semaphore.TryTake())
                {
                    continue;
                }

                int now = Interlocked.Increment(ref holders);
                InterlockedMax(ref maxHolders, now);
                Interlocked.Decrement(ref holders);
                semaphore.Release();
            }

            workersDone.Signal();
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

        Assert.That(Task.WaitAll([.. workers, observer], TimeSpan.FromSeconds(25)), Is.True);
        Assert.That(outOfBounds, Is.Zero);
        Assert.That(maxHolders, Is.InRange(1, MaxCount));
        Assert.That(semaphore.CurrentCount, Is.EqualTo(MaxCount));
    }

    [Test]
    [CancelAfter(30_000)]
    public void Release_ContendedPastMax_ExactlyTheRoomLeftSucceeds(CancellationToken cancellationToken)
    {
        const int MaxCount = 1000;
        const int Threads = 4;
        const int ReleasesPerThread = 400;
        var semaphore = new LockFreeSemaphore(0, MaxCount);
        int succeeded = 0;
        int full = 0;
        using var start = new Barrier(Threads);

        var workers = Enumerable.Range(0, Threads).Select(_ => Task.Factory.StartNew(() =>
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < ReleasesPerThread; i++)
            {
                try
                {
                    semaphore.Release();
                    Interlocked.Increment(ref succeeded);
                }
                catch (SemaphoreFullException)
                {
                    Interlocked.Increment(ref full);
                }
            }
        }, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default)).ToArray();

        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(25)), Is.True);
        Assert.That(succeeded, Is.EqualTo(MaxCount));
        Assert.That(full, Is.EqualTo((Threads * ReleasesPerThread) - MaxCount));
        Assert.That(semaphore.CurrentCount, Is.EqualTo(MaxCount));
    }

    private static void InterlockedMax(ref int target, int value)
    {
        int current = Volatile.Read(ref target);
        while (value > current)
        {
            int seen = Interlocked.CompareExchange(ref target, value, current);
            if (seen == current)
            {
                return;
            }

            current = seen;
        }
    }
}
