using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;

namespace PoolLib.Internal;

/// <summary>
/// One partition of <see cref="IdleSlotStacks{T}"/>: a list of slot entries, newest first, under a
/// lock. An entry may outlive the idleness that put it there (its slot was since taken through a
/// thread's hints): a taker that meets such a stale entry drops it, and the slot's next release,
/// finding no entry, pushes a new one. So each push is popped at most once.
/// </summary>
internal sealed class IdleSlotStack<T> where T : class
{
    // Held while the list changes: a holder may be halfway through unlinking a slot it has claimed.
    private UninterruptibleSpinLock _lock;

    // Guarded by _lock. Every slot in the list has Stack == this, and no other slot has.
    private PoolSlot<T>? _newest;
    private int _count;

#pragma warning disable CS0169 // Never read: it only takes up room (see CacheLinePadding).
    private CacheLinePadding _padding;
#pragma warning restore CS0169

    /// <summary>Gets how many entries the list holds, stale ones included; read without the lock, a snapshot.</summary>
    public int Count => Volatile.Read(ref _count);

    /// <summary>Adds an entry for a slot just made idle, unless another stack already holds one.</summary>
    public void Push(PoolSlot<T> slot)
    {
        _lock.Enter();
        bool pushed = slot.TrySetStack(this);
        if (pushed)
        {
            LinkNewest(slot);
        }

        _lock.Exit();
        if (!pushed)
        {
            return;
        }

        // Whoever claimed the slot meanwhile may have discarded it before the entry existed: both sides
        // fence (TrySetStack here, MarkDiscarded there), so one of them sees the other and unlinks it.
        if (slot.IsDiscarded)
        {
            Remove(slot);
        }
    }

    /// <summary>
    /// Claims the newest idle slot, retired or not, dropping stale entries on the way; keeps the
    /// entries of slots still being returned, and says whether it met one.
    /// </summary>
    /// <remarks>
    /// Invariant kept: every idle slot has an entry. An entry that cannot be claimed at once has its
    /// mark cleared (a full fence) before its phase is read again (see <see cref="TryClaimOrKeep"/>):
    /// a slot still returning, which may have published already, unseen, gets its entry back, newest,
    /// unless its releaser has pushed one meanwhile.
    /// </remarks>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="sawReturning">Set when an entry of a slot still being returned was kept.</param>
    /// <param name="budget">Entries this take may still look at; when it runs out the take gives up, leaving the rest.</param>
    public bool TryTake([NotNullWhen(true)] out PoolSlot<T>? slot, ref bool sawReturning, ref int budget)
    {
        _lock.Enter();
        for (PoolSlot<T>? entry = _newest, older; entry is not null && --budget >= 0; entry = older)
        {
            older = entry.StackOlder;
            Unlink(entry);

            // Claimed: the slot is this taker's, and its next release pushes a new entry.
            if (entry.TryClaimIdle())
            {
                entry.ClearStack(fence: false);
                _lock.Exit();
                slot = entry;
                return true;
            }

            entry.ClearStack(fence: true);
            if (TryClaimOrKeep(entry, ref sawReturning))
            {
                _lock.Exit();
                slot = entry;
                return true;
            }
        }

        _lock.Exit();
        slot = null;
        return false;
    }

    /// <summary>
    /// For an entry whose mark was just cleared: claims its slot if idle, or gives the entry back if the slot is still
    /// returning; else (rented by another, or discarded) the entry goes.
    /// </summary>
    /// <remarks>
    /// The releaser publishes with a plain store and then reads the mark, so its read may pass its store: it may have
    /// seen this entry and pushed none, while its publication lands between any two reads here. So each decision rests
    /// on one read: a slot read idle is claimed, again if the claim lost to a publication; one read returning keeps its
    /// entry. Whoever takes the slot from here on fences after this clear, so its release sees no mark and pushes.
    /// </remarks>
    private bool TryClaimOrKeep(PoolSlot<T> entry, ref bool sawReturning)
    {
        while (true)
        {
            if (entry.TryClaimIdle())
            {
                return true;
            }

            if (entry.IsReturning)
            {
                // Discarded meanwhile by its releaser, who fenced and may have read no stack: no entry.
                if (entry.TrySetStack(this) && !entry.IsDiscarded)
                {
                    LinkNewest(entry);
                    sawReturning = true;
                }
                else if (entry.Stack == this)
                {
                    entry.ClearStack(fence: false);
                }

                return false;
            }

            if (!entry.IsIdle)
            {
                return false;
            }
        }
    }

    /// <summary>Removes a slot's entry, if this stack still holds it.</summary>
    public void Remove(PoolSlot<T> slot)
    {
        _lock.Enter();
        if (slot.Stack == this)
        {
            // Unlinked before the mark goes: once it is gone, another stack may link the slot.
            Unlink(slot);
            slot.ClearStack(fence: false);
        }

        _lock.Exit();
    }

    private void LinkNewest(PoolSlot<T> slot)
    {
        Debug.Assert(_lock.IsHeld && slot.StackNewer is null && slot.StackOlder is null);
        slot.StackOlder = _newest;
        if (_newest is not null)
        {
            _newest.StackNewer = slot;
        }

        _newest = slot;
        _count++;
    }

    private void Unlink(PoolSlot<T> slot)
    {
        Debug.Assert(_lock.IsHeld);
        if (slot.StackNewer is { } newer)
        {
            newer.StackOlder = slot.StackOlder;
        }
        else
        {
            _newest = slot.StackOlder;
        }

        if (slot.StackOlder is { } older)
        {
            older.StackNewer = slot.StackNewer;
        }

        slot.StackNewer = null;
        slot.StackOlder = null;
        _count--;
    }
}
