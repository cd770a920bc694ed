namespace PoolLib.Tests;

public sealed class TestThreadTests
{
    private static readonly TimeSpan s_waitBound = TimeSpan.FromSeconds(20);

    [Test]
    public void Join_BodyThrew_RethrowsItOnTheJoiningThread()
    {
        var thrown = new InvalidOperationException("the body failed");

        TestThread thread = TestThread.Start(() => throw thrown);

        Assert.That(() => thread.Join(s_waitBound), Throws.Exception.SameAs(thrown));
    }

    // What a test's CancelAfter makes a worker that waits on the test's token throw.
    [Test]
    public void Join_BodyCancelled_RethrowsTheCancellation()
    {
        using var cancelled = new CancellationTokenSource();
        cancelled.Cancel();

        TestThread thread = TestThread.Start(cancelled.Token.ThrowIfCancellationRequested);

        Assert.That(() => thread.Join(s_waitBound), Throws.InstanceOf<OperationCanceledException>());
    }

    [Test]
    public void Join_BodyStillRunning_ReturnsFalseAndTrueOnceItEnds()
    {
        using var mayEnd = new ManualResetEventSlim();
        TestThread thread = TestThread.Start(() => mayEnd.Wait(s_waitBound));

        bool endedBefore = thread.Join(TimeSpan.Zero);
        mayEnd.Set();

        Assert.That(endedBefore, Is.False);
        Assert.That(thread.Join(s_waitBound), Is.True);
    }
}
