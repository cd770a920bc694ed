using System.Diagnostics;
using System.Runtime.CompilerServices;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>
/// The handle through which a pooled object is rented: each object has one slot for its whole life,
/// so renting and returning allocate nothing. Disposing the slot returns it to its pool.
/// </summary>
/// <typeparam name="T">The pooled type.</typeparam>
/// <remarks>
/// Every member may be called from any thread. Returning a slot that is back in the pool throws and
/// changes nothing, even when threads race to return it; a handle kept past its release cannot be told
/// from the next renter's, unless released with its <see cref="Rental"/>.
/// </remarks>
public sealed class PoolSlot<T> : IDisposable where T : class
{
    // Bits of _state: the phase in the low two, the rental number above them. A take goes from Idle to
    // Rented and counts one more rental; a release from Rented to Returning (its claim) and then, once
    // CleanUp has run, to Idle; the pool's own claim of an idle slot (to discard it, or to publish it
    // again) from Idle to Returning, so that no release can claim it too; whoever owns the slot may end
    // it in Discarded. Invariant: every change but Returning -> Idle and -> Discarded is a
    // compare-and-swap from the value its maker read, so of any number of racing threads exactly one
    // wins each step and owns the slot until its next one.
    private const int Rented = 0;
    private const int Returning = 1;
    private const int Idle = 2;
    private const int Discarded = 3;
    private const int PhaseMask = 3;
    private const int OneRental = 4;

    // Bits of _flags.
    private const int RetiredFlag = 1;
    private const int UseStampedFlag = 2;

    private readonly Pool<T> _owner;

    // Set once, by a constructor or by Fill, before the slot is registered or handed to anyone.
    private T _object = null!;
    private int _state = Rented + OneRental;

    // RetiredFlag: set once, by Clear or the lifetime sweep: the object goes at its next take or release.
    // UseStampedFlag: set by a take that noted UseStart, cleared by the release that reads it. Either
    // sends the release off its fast path; both change with Interlocked, so neither loses the other.
    private int _flags;

    // The idle stack that holds an entry for this slot, or null: written only under that stack's lock,
    // with a fence, so that a releaser who reads null after publishing knows to push (see IdleSlotStacks).
    private IdleSlotStack<T>? _stack;

    // Links of the stack's list, guarded by its lock.
    internal PoolSlot<T>? StackNewer;
    internal PoolSlot<T>? StackOlder;

    // Where the registry keeps the slot: in its array (Index or NextIndex, by the registry's generation) and, while
    // it compacts, in the array that will replace it (the other one). Written under the registry's lock, read as a hint.
    internal int Index;
    internal int NextIndex;

    // What the pool's time-based options track per object; null while every such option is off.
    internal SlotHistory? History;

    // When the current rental began, for the use-time histogram: written by the taker, before it sets
    // UseStampedFlag, only while a listener has the histogram on.
    internal long UseStart;

    internal PoolSlot(Pool<T> owner) => _owner = owner;

    internal PoolSlot(Pool<T> owner, T @object)
        : this(owner) => _object = @object;

    /// <summary>Gets the pooled object this slot holds.</summary>
    public T Object => _object;

    /// <summary>
    /// Gets the number of the slot's current rental: it changes each time the object is taken. Read it
    /// right after the take and pass it to <see cref="Pool{T}.Release(PoolSlot{T}, int)"/>, so that a
    /// release made with a handle kept from an earlier rental throws instead of returning someone else's.
    /// </summary>
    public int Rental => Volatile.Read(ref _state) >>> 2;

    internal Pool<T> Owner => _owner;

    /// <summary>Gives the new slot its object, which is made after the slot (see SlotLifecycle.CreateSlot).</summary>
    internal void Fill(T @object) => _object = @object;

    internal bool IsIdle => (Volatile.Read(ref _state) & PhaseMask) == Idle;

    internal bool IsRented => (Volatile.Read(ref _state) & PhaseMask) == Rented;

    internal bool IsReturning => (Volatile.Read(ref _state) & PhaseMask) == Returning;

    internal bool IsDiscarded => (Volatile.Read(ref _state) & PhaseMask) == Discarded;

    internal bool IsRetired => (Volatile.Read(ref _flags) & RetiredFlag) != 0;

    /// <summary>Gets whether a release of the slot must leave its fast path: it is retired, or its use time is to be recorded.</summary>
    internal bool NeedsCareOnRelease => Volatile.Read(ref _flags) != 0;

    /// <summary>Gets the number of the current rental if the slot is rented, else -1.</summary>
    internal int RentedRental
    {
        get
        {
            int state = Volatile.Read(ref _state);
            return (state & PhaseMask) == Rented ? state >>> 2 : -1;
        }
    }

    internal IdleSlotStack<T>? Stack => Volatile.Read(ref _stack);

    /// <summary>Returns this slot to the pool it came from.</summary>
    /// <exception cref="InvalidOperationException">The slot is already back in its pool.</exception>
    /// <remarks>
    /// The same as <see cref="Pool{T}.Release(PoolSlot{T})"/> on the slot's own pool: after the pool took
    /// the rental back as abandoned (<see cref="PoolOptions.AbandonedRentalTimeout"/>), it does nothing.
    /// </remarks>
    public void Dispose() => _owner.Release(this);

    /// <summary>
    /// Ends the rental without storing the object: it is disposed if it is <see cref="IDisposable"/>,
    /// and its place under the cap is freed, so a waiting taker gets a new object.
    /// </summary>
    /// <exception cref="InvalidOperationException">The slot is already back in its pool, or discarded by its renter.</exception>
    /// <remarks>
    /// For an object the renter knows is broken. <see cref="Pool{T}.CleanUp"/> does not run. If the
    /// object's <see cref="IDisposable.Dispose"/> throws, the exception propagates after its place
    /// under the cap was freed.
    /// </remarks>
    public void Discard() => _owner.Releases.Discard(this);

    /// <summary>Takes an idle slot, counting a new rental; the caller checks <see cref="IsRetired"/>.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal bool TryClaimIdle()
    {
        int state = Volatile.Read(ref _state);
        return (state & PhaseMask) == Idle
            && Interlocked.CompareExchange(ref _state, state + (OneRental - Idle + Rented), state) == state;
    }

    /// <summary>
    /// Takes an idle slot for the pool itself, to discard it or publish it again: Returning, not Rented, so that a
    /// release of a handle kept from its last rental is refused instead of claiming it too.
    /// </summary>
    internal bool TryClaimIdleForPool()
    {
        int state = Volatile.Read(ref _state);
        return (state & PhaseMask) == Idle
            && Interlocked.CompareExchange(ref _state, state + (Returning - Idle), state) == state;
    }

    /// <summary>Claims the right to return the slot in its current rental, or in rental <paramref name="rental"/> only.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal bool TryBeginReturn(int rental = -1)
    {
        int state = Volatile.Read(ref _state);
        return (state & PhaseMask) == Rented && (rental < 0 || state >>> 2 == rental)
            && Interlocked.CompareExchange(ref _state, state + Returning, state) == state;
    }

    /// <summary>
    /// Makes a returning slot idle. A plain store: only the returning thread writes a returning slot,
    /// and whoever must not miss the publication fences on its own side (see IdleSlotStacks, TakeWaiters).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal void Publish()
    {
        Debug.Assert(IsReturning);
        Volatile.Write(ref _state, _state + (Idle - Returning));
    }

    /// <summary>
    /// Whether maintenance took the slot back as abandoned in the rental a release is for: <paramref name="rental"/>,
    /// or whichever rental it was when that is -1.
    /// </summary>
    internal bool WasTakenBack(int rental)
    {
        if (History is not { } history)
        {
            return false;
        }

        // The phase is read after the take-back's outcome: a claim that won made it returning or discarded.
        int taken = history.TakenBackRental(Volatile.Read(ref _state) >>> 2);
        int state = Volatile.Read(ref _state);
        return taken >= 0 && (state & PhaseMask) is Returning or Discarded && state >>> 2 == taken && (rental < 0 || rental == taken);
    }

    /// <summary>Marks the object for discarding at its next take or release.</summary>
    internal void Retire() => Interlocked.Or(ref _flags, RetiredFlag);

    /// <summary>Notes when this rental began, for the use-time histogram, and that <see cref="UseStart"/> holds it.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal void StampUse(TimeProvider time)
    {
        UseStart = time.GetTimestamp();
        Interlocked.Or(ref _flags, UseStampedFlag);
    }

    /// <summary>Says whether this rental's <see cref="UseStart"/> was noted, clearing the note.</summary>
    internal bool TakeUseStamp() =>
        (Volatile.Read(ref _flags) & UseStampedFlag) != 0 && (Interlocked.And(ref _flags, ~UseStampedFlag) & UseStampedFlag) != 0;

    /// <summary>Marks a slot the caller owns (rented or returning) gone for good; a full fence.</summary>
    internal void MarkDiscarded()
    {
        int state = _state;
        Debug.Assert((state & PhaseMask) is Rented or Returning, "Only the owner of a rented or returning slot discards it.");
        Interlocked.Exchange(ref _state, (state & ~PhaseMask) | Discarded);
    }

    /// <summary>Records which stack holds the slot's entry; only a holder of that stack's lock calls it.</summary>
    internal bool TrySetStack(IdleSlotStack<T> stack) => Interlocked.CompareExchange(ref _stack, stack, null) is null;

    /// <summary>Says no stack holds the slot's entry; only a holder of that stack's lock calls it, with a full fence unless it owns the slot.</summary>
    internal void ClearStack(bool fence)
    {
        if (fence)
        {
            Interlocked.Exchange(ref _stack, null);
        }
        else
        {
            Volatile.Write(ref _stack, null);
        }
    }
}
