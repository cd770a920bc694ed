using PoolLib.Internal;

namespace PoolLib.Tests.Internal;

public sealed class SerialQueueTests
{
    private static readonly TimeSpan s_waitBound = TimeSpan.FromSeconds(20);

    [Test]
    public void RunPending_AnotherThreadIsRunningItems_ReturnsAtOnceAndThatThreadRunsTheItem()
    {
        using var firstRuns = new ManualResetEventSlim();
        using var firstMayEnd = new ManualResetEventSlim();
        var ran = new List<(int Item, Thread Thread)>();
        var queue = new SerialQueue<int>(item =>
        {
            ran.Add((item, Thread.CurrentThread));
            if (item == 1)
            {
                firstRuns.Set();
                firstMayEnd.Wait(s_waitBound);
            }
        });
        queue.Add(1);
        TestThread runner = TestThread.Start(queue.RunPending);
        Assert.That(firstRuns.Wait(s_waitBound), Is.True);

        queue.Add(2);
        queue.RunPending();
        bool ranBeforeTheFirstEnded = ran.Count > 1;
        firstMayEnd.Set();

        Assert.That(runner.Join(s_waitBound), Is.True);
        Assert.That(ranBeforeTheFirstEnded, Is.False, "items run one at a time");
        Assert.That(ran, Is.EqualTo(new[] { (1, runner.Thread), (2, runner.Thread) }));
    }

    [Test]
    public void RunPending_AnItemThrows_TheRunStopsAndTheNextCallRunsTheRest()
    {
        var ran = new List<int>();
        var queue = new SerialQueue<int>(item =>
        {
            ran.Add(item);
            if (item == 1)
            {
                throw new InvalidOperationException("item 1");
            }
        });
        queue.Add(1);
        queue.Add(2);

        Assert.Throws<InvalidOperationException>(queue.RunPending);
        Assert.That(ran, Is.EqualTo(new[] { 1 }));
        queue.RunPending();

        Assert.That(ran, Is.EqualTo(new[] { 1, 2 }));
    }

    // In each round two threads add an item and run the queue once, at once: an item added as a runner stops is left
    // behind (the round ends with it not run), or two runners overlap.
    [Test]
    [CancelAfter(60_000)]
    public void RunPending_TwoThreadsAddingAndRunningAtOnce_EveryItemRunsByTheRoundsEndOneAtATime(CancellationToken cancellationToken)
    {
        const int Rounds = 20_000;
        int running = 0;
        int mostRunning = 0;
        int ranCount = 0;
        var queue = new SerialQueue<int>(_ =>
        {
            mostRunning = Math.Max(mostRunning, Interlocked.Increment(ref running));
            Interlocked.Increment(ref ranCount);
            Interlocked.Decrement(ref running);
        });
        using var roundStarts = new Barrier(3);
        using var roundEnds = new Barrier(3);
        List<TestThread> threads = [.. Enumerable.Range(0, 2).Select(_ => TestThread.Start(() =>
        {
            for (int round = 0; round < Rounds; round++)
            {
                roundStarts.SignalAndWait(cancellationToken);
                queue.Add(round);
                queue.RunPending();
                roundEnds.SignalAndWait(cancellationToken);
            }
        }))];

        int roundsWithAnItemLeft = 0;
        for (int round = 1; round <= Rounds; round++)
        {
            roundStarts.SignalAndWait(cancellationToken);
            roundEnds.SignalAndWait(cancellationToken);
            if (Volatile.Read(ref ranCount) != 2 * round)
            {
                roundsWithAnItemLeft++;
                queue.RunPending();
            }
        }

        threads.ForEach(thread => Assert.That(thread.Join(s_waitBound), Is.True));
        Assert.That(roundsWithAnItemLeft, Is.Zero);
        Assert.That(mostRunning, Is.EqualTo(1));
    }
}
