using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// A lock for sections of a few dozen instructions: taken with a compare-and-swap and given back with
/// a plain store, one atomic instruction a pass where a monitor takes two. A waiter spins, then yields
/// (<see cref="RetryBackoff"/>), and never sleeps, so no interrupt stops it halfway through the work
/// it is waiting to do. A field of its owner, never copied.
/// </summary>
internal struct UninterruptibleSpinLock
{
    // 1 while a thread holds the lock. Taking it is a full fence; the releasing store comes after every
    // write made under the lock, so the next holder sees them all.
    private int _locked;

    /// <summary>Gets whether some thread holds the lock; for assertions.</summary>
    public readonly bool IsHeld => Volatile.Read(in _locked) != 0;

    /// <summary>Takes the lock, waiting as long as it takes.</summary>
    public void Enter()
    {
        if (Interlocked.CompareExchange(ref _locked, 1, 0) != 0)
        {
            EnterContended();
        }
    }

    /// <summary>Gives the lock back; only its holder calls it.</summary>
    public void Exit() => Volatile.Write(ref _locked, 0);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void EnterContended()
    {
        var backoff = new RetryBackoff();
        do
        {
            backoff.Wait();
        }
        while (Volatile.Read(ref _locked) != 0 || Interlocked.CompareExchange(ref _locked, 1, 0) != 0);
    }
}
