using PoolLib.Internal;

namespace PoolLib.Tests.Internal;

public sealed class UninterruptibleSpinLockTests
{
    // A box, so that every thread enters the same lock word rather than a copy of it.
    private sealed class Guarded
    {
        public UninterruptibleSpinLock Lock;
        public int Inside;
        public int MostInside;
        public long Count;
    }

    // Without mutual exclusion, two holders overlap (MostInside 2) or a plain increment is lost.
    [Test]
    public void Enter_ThreadsRacing_OneHolderAtATimeAndNoIncrementLost()
    {
        const int Threads = 4;
        const int Rounds = 1_000_000;
        var guarded = new Guarded();

        Parallel.For(0, Threads, new ParallelOptions { MaxDegreeOfParallelism = Threads }, _ =>
        {
            for (int i = 0; i < Rounds; i++)
            {
                guarded.Lock.Enter();
                int inside = ++guarded.Inside;
                guarded.MostInside = Math.Max(guarded.MostInside, inside);
                guarded.Count++;
                guarded.Inside--;
                guarded.Lock.Exit();
            }
        });

        Assert.That(guarded.MostInside, Is.EqualTo(1));
        Assert.That(guarded.Count, Is.EqualTo(Threads * Rounds));
        Assert.That(guarded.Lock.IsHeld, Is.False);
    }
}
