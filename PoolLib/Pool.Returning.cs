using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using PoolLib.Internal;

namespace PoolLib;

// What a release does beyond its fast path, and what follows every publication of an idle slot:
// the hand-over to a waiter, or the discard in a disposed pool, that the publication may owe.
public abstract partial class Pool<T>
{
    /// <summary>What a release does when its fast path does not apply: options on, the pool disposed, the slot retired or not rented.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReleaseSlow(PoolSlot<T> slot)
    {
        if (!slot.TryBeginAnyReturn())
        {
            ThrowSlotAlreadyReturned();
        }

        if (Volatile.Read(ref _disposed) != 0 || slot.IsRetired)
        {
            Discard(slot, Volatile.Read(ref _disposed) != 0 ? PoolMetrics.DiscardReason.Disposed : PoolMetrics.DiscardReason.Expired);
            return;
        }

        if ((_releaseChecks & TrackIdleTime) != 0)
        {
            // Idle from now: the idle sweep stamps it the first time it finds it in the pool.
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        if (_cleansUp)
        {
            CleanUpOrDiscard(slot);
        }

        if (slot.TryPublish())
        {
            ServeIfWaitedFor(slot);
        }
        else
        {
            Discard(slot, PoolMetrics.DiscardReason.Expired);
        }
    }

    /// <summary>Runs <see cref="CleanUp"/> on a returning slot; if it throws, discards the slot and rethrows.</summary>
    private void CleanUpOrDiscard(PoolSlot<T> slot)
    {
        try
        {
            CleanUp(slot.Object);
        }
        catch (Exception failure)
        {
            DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
            throw;
        }
    }

    /// <summary>
    /// Hands a slot just made idle to a waiter, or discards it if the pool is being disposed, when
    /// either needs it. The publication before this was a full fence (an interlocked swap), so these
    /// read cannot move before it: a waiter queues, and Dispose sets its flag, both with interlocked
    /// operations on _waitersOrDisposed, before they scan the registry. Either they see this slot
    /// idle, or this reads them and does their work for them: no lost wake-up, no idle object left
    /// in a disposed pool.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void ServeIfWaitedFor(PoolSlot<T> slot)
    {
        if (Volatile.Read(ref _waitersOrDisposed) != 0)
        {
            ServeWaitersOrDiscard(slot);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ServeWaitersOrDiscard(PoolSlot<T> slot)
    {
        if (WaiterCount != 0)
        {
            ServeWaiters(slot);
        }

        if ((Volatile.Read(ref _waitersOrDisposed) & DisposedFlag) != 0 && _storage.TryClaim(slot))
        {
            Discard(slot, PoolMetrics.DiscardReason.Disposed);
        }
    }

    /// <summary>Makes a slot the caller took idle again as it is, without <see cref="CleanUp"/> (it was cleaned when it was released).</summary>
    private void StoreAgain(PoolSlot<T> slot)
    {
        if (slot.TryBeginAnyReturn() && !slot.IsRetired && slot.TryPublish())
        {
            ServeIfWaitedFor(slot);
            return;
        }

        Discard(slot, PoolMetrics.DiscardReason.Expired);
    }

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowForeignSlot(string paramName) =>
        throw new ArgumentException("The slot belongs to another pool.", paramName);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowSlotAlreadyReturned() =>
        throw new InvalidOperationException("The slot was already returned: it was released or disposed twice.");
}
