using PoolLib.Internal;

namespace PoolLib.Tests;

// A contended Monitor.Enter throws ThreadInterruptedException on a thread with an interrupt pending;
// every holder of the pool's locks is halfway through something that must finish, so this lock must
// be taken anyway and the interrupt left for the thread's next wait.
public sealed class UninterruptibleLockTests
{
    private static readonly TimeSpan s_waitBound = TimeSpan.FromSeconds(10);

    [Test]
    public void EnterScope_ContendedWithInterruptPending_TakesTheLockAndKeepsTheInterrupt()
    {
        var contended = new UninterruptibleLock();
        bool entered = false;

        (Exception? failure, bool interruptKept) = RunWithInterruptPendingWhileHeld(contended, () =>
        {
            using (contended.EnterScope())
            {
                entered = contended.IsHeldByCurrentThread;
            }
        });

        Assert.That(failure, Is.Null);
        Assert.That(entered, Is.True);
        Assert.That(interruptKept, Is.True, "the interrupt is put back for the thread's next wait");
    }

    // A blocked taker sleeps on its own signal; the release that hands it an object wakes it with a
    // pulse whose lock, contended here, meets the releaser's pending interrupt: the pulse must happen.
    [Test]
    public void PulseAll_ContendedWithInterruptPending_WakesTheSleeperAndKeepsTheInterrupt()
    {
        var signal = new UninterruptibleLock();
        bool woken = false;
        TestThread sleeper = TestThread.Start(() =>
        {
            lock (signal)
            {
                woken = Monitor.Wait(signal, s_waitBound);
            }
        });
        Assert.That(SpinWait.SpinUntil(() => (sleeper.Thread.ThreadState & ThreadState.WaitSleepJoin) != 0, s_waitBound), Is.True, "the sleeper never slept");

        (Exception? failure, bool interruptKept) = RunWithInterruptPendingWhileHeld(signal, signal.PulseAll);

        Assert.That(failure, Is.Null);
        Assert.That(interruptKept, Is.True);
        Assert.That(sleeper.Join(s_waitBound), Is.True, "the sleeper never finished");
        Assert.That(woken, Is.True, "the pulse woke it, not its own timeout");
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
