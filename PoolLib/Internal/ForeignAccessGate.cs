using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// Counts the threads that may touch caches they do not own (<see cref="ThreadSlotCache"/>), and
/// makes sure every owner has seen that count before any of them does.
/// </summary>
/// <remarks>
/// <para>
/// Why: an owner thread works on its own cache with plain reads and writes, no interlocked
/// operation, as long as <see cref="IsClosed"/> reads <see langword="false"/>. That is sound only
/// if no other thread changes the cache meanwhile. A thread that must (a taker that found nothing
/// else, a waiter, Dispose) calls <see cref="Enter"/> first and <see cref="Exit"/> when done.
/// </para>
/// <para>
/// Protocol (an asymmetric Dekker handshake). Owner: set its cache's busy flag, read the gate, work
/// plainly only if the gate reads open, then clear the flag. Foreigner:
/// raise the count, then a process-wide memory barrier
/// (<see cref="Interlocked.MemoryBarrierProcessWide"/>), which drains every core's store buffer.
/// After it, each owner has either published its busy flag (the foreigner waits for it to clear), or
/// has not yet read the gate and will read it raised and keep off the plain path. So the one
/// expensive barrier is paid on the rare side, and the owner's side costs two ordinary stores and a
/// load. The barrier is needed only when the count leaves zero: while it stays above zero, every
/// owner that could read it as zero did so before the first barrier.
/// </para>
/// <para>
/// What it relies on: that the JIT does not move the owner's volatile read of the gate above its
/// volatile write of the busy flag. The .NET memory model allows that reordering, RyuJIT does not do
/// it (volatile accesses keep their order), and on arm64 a store-release followed by a
/// load-acquire is ordered by the hardware too. And that the process-wide barrier is a real one:
/// on Linux it is the membarrier system call (kernel 4.14 or later).
/// </para>
/// <para>
/// Invariant of <see cref="_state"/>: (count &lt;&lt; 1) | fenced. The fenced bit is set only by the
/// thread that raised the count from zero, after its barrier, and is cleared only by the exit that
/// brings the count back to zero; so "fenced" means a barrier has run since the count last left
/// zero. <see cref="Enter"/> returns only once the bit is set.
/// </para>
/// </remarks>
internal sealed class ForeignAccessGate
{
    private const int Fenced = 1;
    private const int OneEntrant = 2;

    // Every barrier any gate has run in this process; read by PoolBench to report barriers per pair.
    private static long s_processWideBarriers;

    private int _state;

    /// <summary>Gets how many process-wide memory barriers gates have run in this process so far.</summary>
    internal static long ProcessWideBarriers => Interlocked.Read(ref s_processWideBarriers);

    /// <summary>Gets whether any thread is in the gate (or entering it): owners must then keep off the plain path.</summary>
    public bool IsClosed
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Volatile.Read(ref _state) != 0;
    }

    /// <summary>Registers the caller as a foreigner; on return it may touch any cache (see <see cref="ThreadSlotCache"/>).</summary>
    public void Enter()
    {
        int state = Interlocked.Add(ref _state, OneEntrant);
        if (state == OneEntrant)
        {
            // The count left zero here, so no barrier covers it yet: run one, then say so.
            Interlocked.MemoryBarrierProcessWide();
            Interlocked.Increment(ref s_processWideBarriers);
            Interlocked.Or(ref _state, Fenced);
            return;
        }

        // Another entrant raised the count from zero; its barrier may still be running.
        var backoff = new RetryBackoff();
        while ((Volatile.Read(ref _state) & Fenced) == 0)
        {
            backoff.Wait();
        }
    }

    /// <summary>Unregisters a caller of <see cref="Enter"/>; the last one out reopens the owners' plain path.</summary>
    public void Exit()
    {
        var backoff = new RetryBackoff();
        while (true)
        {
            int state = Volatile.Read(ref _state);
            int next = state >> 1 == 1 ? 0 : state - OneEntrant;
            if (Interlocked.CompareExchange(ref _state, next, state) == state)
            {
                return;
            }

            backoff.Wait();
        }
    }
}
