using System.Diagnostics;
using PoolLib.Internal;

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
    // The states of _state, in its low bits: Rented -> Returning -> Idle -> Rented ... (a pool
    // without a clean-up goes from Rented to Idle at once), and once, from any of them, -> Discarded.
    // Retired is a flag on top: set by Clear or the lifetime sweep, it makes the next take or release
    // discard the object. Invariant: every change of _state but the last is a compare-and-swap from
    // the value its maker read, so of any number of threads racing for one step (releasers, takers,
    // a thread that discards) exactly one wins it and owns the slot until its next step; the owner
    // alone makes the last, to Discarded.
    internal const int Rented = 0;
    internal const int Returning = 1;
    internal const int Idle = 2;
    internal const int Discarded = 3;
    internal const int Retired = 4;
    private const int StateMask = 3;

    private readonly Pool<T> _owner;
    private readonly T _object;
    private int _state;

    // Written under the pool's registry lock when the slot is registered; see SlotStorage.
    internal int Index;

    // What the pool's time-based options track per object; null while every such option is off.
    internal SlotHistory? History;

    // After the fields above: slots that different threads use never share a cache line, or the
    // pair of lines x64 prefetches together, wherever the allocator puts them.
#pragma warning disable CS0169 // Never read: it only takes up room.
    private CacheLinePadding _padding;
#pragma warning restore CS0169

    internal PoolSlot(Pool<T> owner, T @object)
    {
        _owner = owner;
        _object = @object;
        _state = Rented;
    }

    /// <summary>Gets the pooled object this slot holds.</summary>
    public T Object => _object;

    internal Pool<T> Owner => _owner;


    internal bool IsIdle => (Volatile.Read(ref _state) & StateMask) == Idle;

    internal bool IsRented => (Volatile.Read(ref _state) & StateMask) == Rented;

    internal bool IsRetired => (Volatile.Read(ref _state) & Retired) != 0;

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

    /// <summary>Takes an idle slot that is not retired; the fast path of a take.</summary>
    internal bool TryClaimIdle() => Interlocked.CompareExchange(ref _state, Rented, Idle) == Idle;

    /// <summary>Takes an idle slot, retired or not; the caller checks <see cref="IsRetired"/> and discards a retired one.</summary>
    internal bool TryClaimAnyIdle() => TryMove(Idle, Rented);

    /// <summary>Claims the right to return a rented slot that is not retired; only one caller can win it per rental.</summary>
    internal bool TryBeginReturn() => Interlocked.CompareExchange(ref _state, Returning, Rented) == Rented;

    /// <summary>
    /// Makes a rented slot that is not retired idle at once, for a pool with no clean-up to run;
    /// only one caller can win it per rental, and the swap orders what follows it after the publication.
    /// </summary>
    internal bool TryReturnIdle() => Interlocked.CompareExchange(ref _state, Idle, Rented) == Rented;

    /// <summary>Claims the right to return a rented slot, retired or not; the caller checks <see cref="IsRetired"/>.</summary>
    internal bool TryBeginAnyReturn() => TryMove(Rented, Returning);

    /// <summary>
    /// Makes a returning slot idle, unless it was retired meanwhile (the caller then discards it);
    /// the swap orders what follows it after the publication.
    /// </summary>
    internal bool TryPublish() => Interlocked.CompareExchange(ref _state, Idle, Returning) == Returning;

    /// <summary>Sets <see cref="Retired"/> unless the slot is discarded or retired already.</summary>
    internal void Retire()
    {
        int state = Volatile.Read(ref _state);
        while ((state & StateMask) != Discarded && (state & Retired) == 0)
        {
            int seen = Interlocked.CompareExchange(ref _state, state | Retired, state);
            if (seen == state)
            {
                return;
            }

            state = seen;
        }
    }

    /// <summary>
    /// Moves the slot from state <paramref name="from"/> to <paramref name="to"/>, keeping the
    /// <see cref="Retired"/> flag; a swap that fails only because the flag was set meanwhile is retried.
    /// </summary>
    private bool TryMove(int from, int to)
    {
        int state = Volatile.Read(ref _state);
        while ((state & StateMask) == from)
        {
            int seen = Interlocked.CompareExchange(ref _state, (state & Retired) | to, state);
            if (seen == state)
            {
                return true;
            }

            state = seen;
        }

        return false;
    }

    /// <summary>Marks a slot the caller owns (one it took or is returning) gone for good.</summary>
    internal void MarkDiscarded()
    {
        Debug.Assert((_state & StateMask) is Rented or Returning, "Only the owner of a rented or returning slot discards it.");
        Volatile.Write(ref _state, Discarded);
    }
}
