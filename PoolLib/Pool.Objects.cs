using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using PoolLib.Internal;

namespace PoolLib;

// How objects come and go: made within the cap, discarded with their place under it given back,
// whatever user code throws on the way.
public abstract partial class Pool<T>
{
    /// <summary>Makes an object that the pool neither counts nor keeps; for callers that must not wait (see <see cref="ObjectPoolAdapter{T}"/>).</summary>
    internal T CreateUnpooled()
    {
        ThrowIfDisposed();
        return Construct();
    }

    /// <summary>Ends a rental without storing the object; what <see cref="PoolSlot{T}.Discard"/> does.</summary>
    internal void DiscardRental(PoolSlot<T> slot)
    {
        if (!slot.TryBeginAnyReturn())
        {
            ThrowSlotAlreadyReturned();
        }

        Discard(slot, Volatile.Read(ref _disposed) != 0 ? PoolMetrics.DiscardReason.Disposed : PoolMetrics.DiscardReason.Discarded);
    }

    /// <summary>Creates up to <paramref name="count"/> objects and stores them idle, within the cap.</summary>
    /// <param name="count">How many objects to create; zero or more.</param>
    /// <returns><see langword="true"/> if all were created; <see langword="false"/> if the cap stopped it early (those created stay).</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="count"/> is negative.</exception>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <remarks>Safe to call from a subclass constructor once what <see cref="ObjectConstructor"/> reads is set.</remarks>
    protected bool TryAllocatePush(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);

        for (int i = 0; i < count; i++)
        {
            if (!TryAllocatePush())
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Creates one object and stores it idle, if the cap allows.</summary>
    /// <returns><see langword="false"/> if <see cref="MaxCapacity"/> objects already exist.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <remarks>The object is for whichever thread takes first, not kept for the calling thread.</remarks>
    protected bool TryAllocatePush()
    {
        ThrowIfDisposed();
        if (!_allocationBudget.TryTake())
        {
            return false;
        }

        PoolSlot<T> slot = CreateSlot();
        if (!slot.TryReturnIdle())
        {
            // Retired by a Clear or the lifetime sweep since it was registered.
            Discard(slot, PoolMetrics.DiscardReason.Expired);
            return true;
        }

        ServeIfWaitedFor(slot);
        return true;
    }

    private T Construct() =>
        ObjectConstructor() ?? throw new InvalidOperationException($"{GetType().Name}.{nameof(ObjectConstructor)} returned null.");

    /// <summary>Makes an object and its slot, rented, with one unit of budget the caller already holds.</summary>
    private PoolSlot<T> CreateSlot()
    {
        int clears = Volatile.Read(ref _clears);
        T @object;
        try
        {
            @object = Construct();
        }
        catch
        {
            ReturnBudget();
            throw;
        }

        var slot = new PoolSlot<T>(this, @object) { History = NewHistory() };
        _storage.Register(slot);

        // A Clear that ran while the object was made did not see it: it goes as if seen.
        if (Volatile.Read(ref _clears) != clears)
        {
            slot.Retire();
        }

        try
        {
            HoldSlotInObject(@object, slot);
        }
        catch (Exception failure)
        {
            // Never counted as created, so not counted as discarded either.
            DiscardAfterFailure(slot, failure, reason: null);
            throw;
        }

        PoolMetrics.Created(_name);
        return slot;
    }

    /// <summary>Makes an object for a taker with one unit of budget the caller already holds, and starts its rental.</summary>
    private PoolSlot<T> CreateRentedSlot()
    {
        PoolSlot<T> slot = CreateSlot();
        _storage.NoteTaken(slot);
        if ((_takeChecks & TrackRentals) != 0)
        {
            BeginTrackedRental(slot);
        }

        return slot;
    }

    /// <summary>
    /// Disposes the object of a slot the caller owns (rented or returning, never idle) and, unless
    /// <paramref name="returnBudget"/> is <see langword="false"/>, gives its place under the cap
    /// back, even if the object's Dispose throws.
    /// </summary>
    /// <param name="slot">The slot.</param>
    /// <param name="reason">Why, for the discarded-objects counter; <see langword="null"/> for an object never counted as created.</param>
    /// <param name="returnBudget">Whether the place under the cap goes back to the pool, or stays with the caller.</param>
    private void Discard(PoolSlot<T> slot, PoolMetrics.DiscardReason? reason, bool returnBudget = true)
    {
        slot.MarkDiscarded();
        _storage.Unregister(slot);
        if (reason is { } counted)
        {
            PoolMetrics.Discarded(_name, counted);
        }

        try
        {
            (slot.Object as IDisposable)?.Dispose();
        }
        finally
        {
            if (returnBudget)
            {
                ReturnBudget();
            }
        }
    }

    /// <summary>
    /// Discards a slot whose object just failed in user code with <paramref name="failure"/>, which
    /// the caller rethrows; if the object's Dispose throws too, both leave together instead.
    /// </summary>
    private void DiscardAfterFailure(PoolSlot<T> slot, Exception failure, PoolMetrics.DiscardReason? reason)
    {
        try
        {
            Discard(slot, reason);
        }
        catch (Exception disposeFailure)
        {
            throw new AggregateException(failure, disposeFailure);
        }
    }

    /// <summary>
    /// Discards an idle object a take refused (invalid or retired). A taker that keeps the place
    /// under the cap (to make a new object with it) gives it back after all if the object's Dispose
    /// throws, since that exception ends the take.
    /// </summary>
    private void DiscardRefused(PoolSlot<T> slot, PoolMetrics.DiscardReason reason, bool keepBudget)
    {
        try
        {
            Discard(slot, reason, returnBudget: !keepBudget);
        }
        catch (Exception) when (keepBudget)
        {
            ReturnBudget();
            throw;
        }
    }

    /// <summary>
    /// Discards every idle slot, or every idle one that is retired. Every object is disposed even if
    /// some throw; then the one exception is rethrown as it is, or several in an <see cref="AggregateException"/>.
    /// </summary>
    /// <returns>How many were discarded.</returns>
    private int DiscardIdle(PoolMetrics.DiscardReason reason, bool retiredOnly)
    {
        int discarded = 0;
        List<Exception>? failures = null;
        foreach (PoolSlot<T>? slot in _storage.Registered)
        {
            // Retired is never cleared, so a slot read retired is still retired once claimed.
            if (slot is null || !slot.IsIdle || (retiredOnly && !slot.IsRetired) || !_storage.TryClaim(slot))
            {
                continue;
            }

            discarded++;
            try
            {
                Discard(slot, reason);
            }
            catch (Exception failure)
            {
                (failures ??= []).Add(failure);
            }
        }

        if (failures is not null)
        {
            ThrowDisposeFailures(failures);
        }

        return discarded;
    }

    private void ReturnBudget()
    {
        _allocationBudget.Release();

        // The release was a full fence: a waiter that queued before it is seen here and gets the unit.
        if (WaiterCount != 0)
        {
            ServeWaiters(released: null);
        }
    }

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowDisposeFailures(List<Exception> failures)
    {
        Debug.Assert(failures.Count > 0);
        if (failures.Count == 1)
        {
            ExceptionDispatchInfo.Throw(failures[0]);
        }

        throw new AggregateException(failures);
    }
}
