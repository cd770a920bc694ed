using System.Diagnostics;

namespace PoolLib;

/// <summary>
/// The handle through which a pooled object is rented. Each object a <see cref="Pool{T}"/> creates
/// has exactly one slot for its whole life, so renting and returning allocate nothing.
/// </summary>
/// <typeparam name="T">The pooled type.</typeparam>
/// <remarks>
/// <para>
/// A slot knows its pool and whether it is in the pool or out of it. Disposing the slot returns it
/// to its pool, exactly like <see cref="Pool{T}.Release(PoolSlot{T})"/>; returning it a second time
/// throws <see cref="InvalidOperationException"/> and changes nothing.
/// </para>
/// <para>
/// Thread safety: <see cref="Object"/> may be read from any thread. <see cref="Dispose"/> may race
/// with another <see cref="Dispose"/> or release of the same slot: exactly one of them returns it,
/// the others throw. Using <see cref="Object"/> after the slot went back is a bug the slot cannot
/// detect: the object may already belong to another renter.
/// </para>
/// </remarks>
public sealed class PoolSlot<T> : IDisposable where T : class
{
    // The slot's life: Rented -> Returning -> InPool -> Rented ... and, once, -> Discarded.
    // Rented -> Returning is a CAS, so only one releaser can win. Every other transition is made by the one thread that owns the slot at that moment (the
    // winner of Rented -> Returning, or the thread that popped the slot from storage), so a plain
    // volatile write is enough for them.
    private const int Rented = 0;
    private const int Returning = 1;
    private const int InPool = 2;
    private const int Discarded = 3;

    private readonly Pool<T> _owner;
    private readonly T _object;
    private int _state;

    // Links for the pool's storage (SlotStack): this slot's index in the pool's registry, the
    // index + 1 of the slot below it while it is in the stack (0: none), and its depth there (1 at
    // the bottom). Written only by the thread that owns the slot (the registering pool, or the
    // pusher) before the push that publishes it; read by poppers, pushers and counters.
    internal int StackIndex;
    internal int NextInStack;
    internal int DepthInStack;

    // The pool's optional features, each written only while its option is on. CreatedAt and
    // Generation are set once, when the object is made; Expired is set once, by the maintenance
    // timer, when the object has outlived MaxObjectLifetime. IdleSince is 0 from each release until the
    // pool's idle sweep first sees the slot in the pool, then that sweep's timestamp. RentalNumber,
    // RentedAt and TakenAt describe the current rental (leak detection); LeakReportedFor is the
    // number of the last rental reported, so each rental is reported once.
    internal long CreatedAt;
    internal bool Expired;
    internal int Generation;
    internal long IdleSince;
    internal long RentalNumber;
    internal long RentedAt;
    internal StackTrace? TakenAt;
    internal long LeakReportedFor;

    internal PoolSlot(Pool<T> owner, T @object)
    {
        _owner = owner;
        _object = @object;
        _state = Rented;
    }

    /// <summary>Gets the pooled object this slot holds.</summary>
    public T Object => _object;

    internal Pool<T> Owner => _owner;

    internal bool IsInPool => Volatile.Read(ref _state) == InPool;

    internal bool IsRented => Volatile.Read(ref _state) == Rented;

    /// <summary>Returns this slot to the pool it came from.</summary>
    /// <exception cref="InvalidOperationException">The slot is already back in its pool.</exception>
    /// <remarks>The same as <see cref="Pool{T}.Release(PoolSlot{T})"/> on the slot's own pool.</remarks>
    public void Dispose() => _owner.Release(this);

    /// <summary>
    /// Ends the rental without storing the object: it is disposed if it is <see cref="IDisposable"/>,
    /// and its place under the cap is freed, so a waiting taker gets a new object.
    /// </summary>
    /// <exception cref="InvalidOperationException">The slot is already back in its pool, or discarded.</exception>
    /// <remarks>
    /// For an object the renter knows is broken. <see cref="Pool{T}.CleanUp"/> does not run. If the
    /// object's <see cref="IDisposable.Dispose"/> throws, the exception propagates after its place
    /// under the cap was freed.
    /// </remarks>
    public void Discard() => _owner.DiscardRental(this);

    /// <summary>Claims the right to return the slot; only one caller can win it per rental.</summary>
    internal bool TryBeginReturn() => Interlocked.CompareExchange(ref _state, Returning, Rented) == Rented;

    /// <summary>Marks the slot stored; called by its returner just before making it visible to takers.</summary>
    internal void MarkInPool()
    {
        Debug.Assert(_state is Returning or Rented, "Only a returner or the creator stores a slot.");
        Volatile.Write(ref _state, InPool);
    }

    /// <summary>Marks the slot rented; called by the one thread that took it out of storage.</summary>
    internal void MarkRented()
    {
        Debug.Assert(_state == InPool, "A slot taken from storage must have been in it.");
        Volatile.Write(ref _state, Rented);
    }

    /// <summary>Marks the slot gone for good; its object has been or is being disposed.</summary>
    internal void MarkDiscarded() => Volatile.Write(ref _state, Discarded);
}
