using System.Runtime.CompilerServices;
using Microsoft.Extensions.ObjectPool;

namespace PoolLib.Internal;

/// <summary>
/// A pool's releases off their fast path: a retired object discarded; idle time reset or stamped; use time recorded;
/// an <see cref="IResettable"/> reset, and discarded when that fails; a failed claim told apart from a rental taken
/// back as abandoned; a renter's discard; and a publication that owes more than a plain store (an entry on an idle
/// stack, a waiter served, a discard after Dispose).
/// </summary>
internal sealed class SlowReleases<T> where T : class
{
    private readonly Pool<T> _pool;
    private readonly TimeProvider _time;

    // Whether a release resets the idle sweep's stamp, and whether it calls IResettable.TryReset instead of CleanUp.
    private readonly bool _tracksIdleTime;
    private readonly bool _resetsObjects;

    public SlowReleases(Pool<T> pool, TimeProvider time, bool tracksIdleTime, bool resetsObjects)
    {
        _pool = pool;
        _time = time;
        _tracksIdleTime = tracksIdleTime;
        _resetsObjects = resetsObjects;
    }

    /// <summary>Ends a rental without storing the object; what <see cref="PoolSlot{T}.Discard"/> does.</summary>
    public void Discard(PoolSlot<T> slot)
    {
        if (!slot.TryBeginReturn())
        {
            Refuse(slot, rental: -1);
            return;
        }

        RecordUse(slot);
        _pool.Lifecycle.Discard(slot, _pool.Waiters.IsDisposed ? PoolMetrics.DiscardReason.Disposed : PoolMetrics.DiscardReason.Discarded);
    }

    /// <summary>Ends a rental that its release's fast path leaves here: see the type.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public void End(PoolSlot<T> slot)
    {
        RecordUse(slot);
        if (slot.IsRetired)
        {
            _pool.Lifecycle.Discard(slot, PoolMetrics.DiscardReason.Expired);
            return;
        }

        if (_tracksIdleTime)
        {
            // Idle from now: the idle sweep stamps it the first time it finds it in the pool.
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        _pool.IdleValidation?.StampRelease(slot);

        if (CleanUpOrDiscard(slot))
        {
            _pool.Store(slot);
        }
    }

    /// <summary>What a release whose claim failed owes: nothing for a rental taken back as abandoned (but a count); else an exception.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public void Refuse(PoolSlot<T> slot, int rental)
    {
        if (!slot.WasTakenBack(rental))
        {
            PoolThrowHelper.ThrowSlotAlreadyReturned();
        }

        PoolMetrics.ReleasedLate(_pool.Name);
    }

    /// <summary>Records how long a rental that is ending lasted, if its beginning was noted.</summary>
    private void RecordUse(PoolSlot<T> slot)
    {
        if (slot.TakeUseStamp())
        {
            PoolMetrics.Used(_pool.Name, _time.GetElapsedTime(slot.UseStart));
        }
    }

    /// <summary>Makes idle again a slot handed to a waiter that gave up, whose object nobody used.</summary>
    public void StoreAgain(PoolSlot<T> slot)
    {
        if (_tracksIdleTime)
        {
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        _pool.Store(slot);
    }

    /// <summary>
    /// Gives a slot just published an entry if it has none, then serves a waiter with it or discards it
    /// after Dispose. Waiters and Dispose lock every idle stack after they announce themselves, and a
    /// push locks one, so the read of their word after a push cannot miss them (see <see cref="TakeWaiters{T}"/>).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public void AfterPublish(PoolSlot<T> slot)
    {
        if (slot.Stack is null)
        {
            _pool.IdleStacks.Push(slot);
        }

        if (_pool.Waiters.Count != 0)
        {
            bool unused = false;
            _pool.Waiters.Serve(_pool.Waiting, slot, scan: false, ref unused);
        }

        if (_pool.Waiters.IsDisposed && slot.TryClaimIdleForPool())
        {
            _pool.Hints.Current.CountIdle(-1);
            _pool.Lifecycle.Discard(slot, PoolMetrics.DiscardReason.Disposed);
        }
    }

    /// <summary>
    /// Runs <see cref="Pool{T}.CleanUp"/>, or <see cref="IResettable.TryReset"/>, on a returning slot; if it
    /// throws, discards the slot and rethrows; if the reset fails, discards the slot and returns false.
    /// </summary>
    private bool CleanUpOrDiscard(PoolSlot<T> slot)
    {
        bool reset = true;
        try
        {
            if (_resetsObjects)
            {
                reset = ((IResettable)slot.Object).TryReset();
            }
            else
            {
                _pool.CleanUpObject(slot.Object);
            }
        }
        catch (Exception failure)
        {
            _pool.Lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
            throw;
        }

        if (!reset)
        {
            _pool.Lifecycle.Discard(slot, PoolMetrics.DiscardReason.ResetFailed);
        }

        return reset;
    }
}
