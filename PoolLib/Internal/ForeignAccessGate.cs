using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// The handshake between the owner of some thread-local state, which works on it with plain reads
/// and writes, and the other threads (foreigners) that sometimes must touch it too.
/// </summary>
/// <remarks>
/// <para>
/// Protocol, an asymmetric Dekker handshake. Each owner has a busy flag. Owner
/// (<see cref="TryBeginOwnerAccess"/>, <see cref="EndOwnerAccess"/>): set its busy flag, read the
/// gate, work plainly only if the gate reads open, then clear the flag. Foreigner
/// (<see cref="Enter"/>, <see cref="TryWaitForOwner"/>, <see cref="Exit"/>): raise the gate's
/// count, run a process-wide memory barrier (<see cref="Interlocked.MemoryBarrierProcessWide"/>),
/// then touch an owner's state only once its busy flag reads clear. After the barrier every owner
/// has either published its busy flag (the foreigner sees it and waits) or not yet read the gate
/// (and will read it closed and keep off the plain path). So the expensive barrier is paid on the
/// rare side, and the owner's side costs two ordinary stores and a load.
/// </para>
/// <para>
/// Only the entry that raises the count from zero runs a barrier: while the count stays above zero
/// every owner that could read it as zero did so before that barrier. Entrants that arrive while
/// the first one's barrier runs wait for it to finish.
/// </para>
/// <para>
/// What it relies on: that the JIT keeps the owner's volatile read of the gate after its volatile
/// write of the busy flag (RyuJIT keeps volatile accesses in order, and on arm64 a store-release
/// followed by a load-acquire is ordered by the hardware); and that the process-wide barrier is a
/// real one (on Linux the membarrier system call). Not guaranteed: fairness; a foreigner that waits
/// for an owner preempted inside its plain operation waits until the owner runs again.
/// </para>
/// </remarks>
internal sealed class ForeignAccessGate
{
    private const int Fenced = 1;
    private const int OneEntrant = 2;

    // Every barrier any gate has run in this process; read by PoolBench to report barriers per pair.
    private static long s_processWideBarriers;

    // Invariant: (entrant count << 1) | Fenced. Fenced is set only by the entrant that raised the
    // count from zero, after its barrier, and cleared only by the exit that brings the count back to
    // zero; so it means "a barrier has run since the count last left zero". Enter returns only once
    // it is set.
    private int _state;

    /// <summary>Gets how many process-wide memory barriers gates have run in this process so far.</summary>
    internal static long ProcessWideBarriers => Interlocked.Read(ref s_processWideBarriers);

    /// <summary>Gets whether any foreigner is inside (or entering): owners must keep off their plain path.</summary>
    public bool IsClosed
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => Volatile.Read(ref _state) != 0;
    }

    /// <summary>Owner: starts a plain operation guarded by <paramref name="busy"/>, unless the gate is closed.</summary>
    /// <param name="busy">The owner's busy flag; only its owner writes it.</param>
    /// <returns><see langword="false"/> if the gate is closed; nothing was started and nothing must be ended.</returns>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryBeginOwnerAccess(ref int busy)
    {
        Volatile.Write(ref busy, 1);
        if (Volatile.Read(ref _state) == 0)
        {
            return true;
        }

        Volatile.Write(ref busy, 0);
        return false;
    }

    /// <summary>Owner: ends the plain operation a successful <see cref="TryBeginOwnerAccess"/> started.</summary>
    /// <param name="busy">The owner's busy flag.</param>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static void EndOwnerAccess(ref int busy) => Volatile.Write(ref busy, 0);

    /// <summary>
    /// Foreigner, inside the gate: makes sure the owner of <paramref name="busy"/> is not in a plain
    /// operation; it then cannot start one until the gate opens.
    /// </summary>
    /// <param name="busy">The owner's busy flag.</param>
    /// <param name="waitForOwner">Whether to wait for a busy owner to finish, or give up at once.</param>
    /// <returns><see langword="true"/> if the owner's state may be touched now.</returns>
    public bool TryWaitForOwner(ref int busy, bool waitForOwner)
    {
        Debug.Assert(IsClosed, "Only a thread inside the gate may touch an owner's state.");

        var backoff = new RetryBackoff();
        while (Volatile.Read(ref busy) != 0)
        {
            if (!waitForOwner)
            {
                return false;
            }

            backoff.Wait();
        }

        return true;
    }

    /// <summary>Registers the caller as a foreigner; on return no owner works plainly until the matching <see cref="Exit"/>.</summary>
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
