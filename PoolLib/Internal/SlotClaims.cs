using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// What a take owes for an idle slot it has claimed (a retired or invalid object is discarded, a valid one hinted to
/// the taking thread), and where a take looks past its thread's hints: the idle stacks, then a new object within
/// the cap, made on the taker's thread or, where the pool creates asynchronously, left to the background creations.
/// </summary>
internal sealed class SlotClaims<T> where T : class
{
    private readonly Pool<T> _pool;

    // Entries a take looks at before it asks the threads' idle counts whether any slot is idle at all: so a take that
    // meets a long run of stale entries (slots since taken back through hints) when none is idle stops there, instead
    // of paying for the pool's history. The entries it looked at are dropped, as every look drops them.
    private const int EntriesBeforeCounting = 64;

    public SlotClaims(Pool<T> pool) => _pool = pool;

    /// <summary>
    /// Claims an idle slot from the stacks, looking at <see cref="EntriesBeforeCounting"/> entries before it asks the
    /// threads' idle counts whether any is idle; with none, it gives up there, leaving the other stale entries.
    /// </summary>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="waiting">For a queued waiter, which must meet every idle slot before it sleeps: it locks every stack, and trusts a count of none only after a process-wide barrier.</param>
    /// <param name="sawReturning">Set when an entry of a slot still being returned was passed over.</param>
    public bool TryTakeFromStacks([NotNullWhen(true)] out PoolSlot<T>? slot, bool waiting, ref bool sawReturning)
    {
        int budget = EntriesBeforeCounting;
        if (_pool.IdleStacks.TryTake(out slot, lookEverywhere: waiting, ref sawReturning, ref budget))
        {
            return true;
        }

        if (budget >= 0 || !AnyIdle(waiting))
        {
            return false;
        }

        budget = int.MaxValue;
        return _pool.IdleStacks.TryTake(out slot, lookEverywhere: waiting, ref sawReturning, ref budget);
    }

    /// <summary>Whether the threads' idle counts say some slot is idle; for a waiter, counting every publication it must meet.</summary>
    private bool AnyIdle(bool waiting)
    {
        if (_pool.Hints.SumIdleBalances() > 0)
        {
            return true;
        }

        if (!waiting)
        {
            return false;
        }

        // A releaser publishes and counts, then reads the waiter queue's word, with no fence between: it may have read
        // no waiter while neither of its stores is seen here. After the barrier both are, or its read sees this waiter.
        Interlocked.MemoryBarrierProcessWide();
        return _pool.Hints.SumIdleBalances() > 0;
    }

    /// <summary>
    /// For a take that its thread's hints did not serve: an idle object from the stacks, else a new one
    /// within the cap. Null when neither is there, or with <paramref name="refused"/> set when the idle
    /// object found was refused and discarded, so that another may be.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public PoolSlot<T>? TakeIdleOrNew(ThreadHints<T> hints, out bool refused)
    {
        bool unused = false;
        if (TryTakeFromStacks(out PoolSlot<T>? slot, waiting: false, ref unused))
        {
            hints.CountIdle(-1);
            refused = !TryAccept(slot, hints, hinted: false, keepUnit: false, out _);
            return refused ? null : slot;
        }

        refused = false;
        if (_pool.Creator is { } creator)
        {
            creator.StartFilling();
            if (_pool.CreatesAsynchronously)
            {
                // Made in the background, for the oldest waiter: this taker waits (or does not) as any other.
                return null;
            }
        }

        if (!_pool.TryTakeUnit())
        {
            return null;
        }

        slot = _pool.Waiting.CreateRentedSlot(hints);
        refused = slot is null;
        return slot;
    }

    /// <summary>
    /// Calls <see cref="Pool{T}.Validate"/> for an idle slot the calling thread has claimed; discards it if it is refused or
    /// throws. False too if maintenance took the rental back as abandoned meanwhile (a validation that outlasted
    /// <see cref="PoolOptions.AbandonedRentalTimeout"/>): the object is gone, and its unit of the cap with it.
    /// </summary>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="keepUnit">Whether a refused object's unit of the cap stays with the caller (see <see cref="TryAccept"/>).</param>
    /// <param name="unitKept">Whether the caller holds a unit of the cap after a refusal: as asked, unless taken back.</param>
    public bool IsValidOrDiscarded(PoolSlot<T> slot, bool keepUnit, out bool unitKept)
    {
        unitKept = false;
        bool valid;
        try
        {
            valid = _pool.IsValid(slot.Object);
        }
        catch (Exception failure)
        {
            // Unless maintenance took the rental back meanwhile and discarded the object, which may be why Validate
            // threw: the take then gives it up, as it would had Validate returned.
            if (!slot.TryBeginReturn())
            {
                return false;
            }

            _pool.Lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.Invalid);
            throw;
        }

        if (!valid)
        {
            unitKept = _pool.Lifecycle.DiscardRefused(slot, PoolMetrics.DiscardReason.Invalid, keepUnit);
            return false;
        }

        return slot.IsRented;
    }

    /// <summary>
    /// What a take owes for an idle slot it has claimed: a retired or invalid object is discarded (and
    /// this returns <see langword="false"/>); otherwise the slot is hinted.
    /// </summary>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="hints">The calling thread's hints.</param>
    /// <param name="hinted">Whether the slot came from those hints, so needs no new one.</param>
    /// <param name="keepUnit">
    /// Whether a refused object's unit of the cap stays with the caller, who makes a new object
    /// with it (a waiter that was handed the object), instead of going back to the pool.
    /// </param>
    /// <param name="unitKept">Whether the caller holds a unit of the cap after a refusal: as asked, unless
    /// maintenance took the rental back meanwhile.</param>
    public bool TryAccept(PoolSlot<T> slot, ThreadHints<T> hints, bool hinted, bool keepUnit, out bool unitKept)
    {
        if (slot.IsRetired)
        {
            unitKept = _pool.Lifecycle.DiscardRefused(slot, PoolMetrics.DiscardReason.Expired, keepUnit);
            return false;
        }

        if (!IsValidOrDiscarded(slot, keepUnit, out unitKept))
        {
            return false;
        }

        if (!hinted)
        {
            hints.Hint(_pool.Registry.IndexOf(slot), _pool.MaxHints);
        }

        return true;
    }
}
