using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace PoolLib.Internal;

/// <summary>
/// A few idle slots kept by one thread for itself, so that a thread that takes and returns touches
/// only memory it owns, with no interlocked operation. Other threads take from it only inside a
/// <see cref="ForeignAccessGate"/>. It also holds the thread's batch policy with the shared stack.
/// </summary>
/// <remarks>
/// <para>
/// Ownership: one cache per pool per managed thread id. Only the thread with that id (the owner)
/// adds entries or moves <see cref="_top"/>. A thread's id is reused only after the thread is gone,
/// so there is never more than one owner at a time.
/// </para>
/// <para>
/// Invariants. (1) An entry holds <see langword="null"/> or a slot that is in the pool, and a slot
/// is in at most one entry, and then not in the shared stack. (2) The owner touches the entries
/// plainly only inside an owner access of the gate, guarded by <see cref="_busy"/>. (3) A foreigner
/// touches entries only inside the gate, after the gate has seen the owner out of its plain
/// operation, and only by <see cref="Interlocked.Exchange{T}(ref T, T)"/> with <see langword="null"/>,
/// so of any number of foreigners exactly one gets each slot. By the gate's handshake, (2) and (3)
/// never overlap in time on one cache.
/// </para>
/// <para>
/// <see cref="_top"/> falls only when the owner takes or drains, never when a foreigner empties an
/// entry. So a thread that only returns (one that hands objects back for takers on other threads)
/// stops keeping after <see cref="Capacity"/> returns, and its later returns go where those takers
/// look first, the shared stack, instead of waiting to be stolen.
/// </para>
/// <para>
/// Batches with the shared stack, all decided here: each slot the owner takes from the stack earns
/// a push credit, each slot it pushes earns a refill credit. A take from the stack may bring up to
/// <see cref="RefillLimit"/> slots at once, spending a refill credit; a release that finds the cache
/// full may push the whole cache with it (<see cref="TryDrainOwn"/>), spending a push credit. So
/// batches flow only for a thread that does both (one that takes many objects, then returns them
/// all); a thread that only takes, like a server's receive loop, takes one at a time instead of
/// parking slots in its cache while other threads run short.
/// </para>
/// <para>
/// Layout: the fields sit in the middle of a 256-byte object, so no two threads' caches share a
/// cache line (or the adjacent line x64 prefetches), whatever the allocator puts next to them.
/// </para>
/// </remarks>
[StructLayout(LayoutKind.Explicit, Size = 256)]
internal sealed class ThreadSlotCache
{
    /// <summary>How many idle slots one thread keeps for itself.</summary>
    public const int Capacity = 8;

    // Bounds the credits, so a thread that only takes, or only returns, cannot overflow them.
    private const int MaxCredits = 1 << 20;

    // 1 while the owner works on the entries plainly (invariant 2); written only by the owner.
    [FieldOffset(64)]
    private int _busy;

    // Owner-only: entries at and above it are empty; below it they may be full, or emptied by a foreigner.
    [FieldOffset(68)]
    private int _top;

    // Owner-only: slots taken from the shared stack not yet matched by a batch push, at most MaxCredits.
    [FieldOffset(72)]
    private int _pushCredits;

    // Owner-only: slots pushed onto the shared stack not yet matched by a batch take, at most MaxCredits.
    [FieldOffset(76)]
    private int _refillCredits;

    [FieldOffset(80)]
    private Entries _entries;

    /// <summary>Gets how many entries hold a slot: exact when nobody is taking or storing, otherwise a snapshot.</summary>
    public int Count
    {
        get
        {
            int count = 0;
            for (int i = 0; i < Capacity; i++)
            {
                if (Volatile.Read(ref _entries[i]) is not null)
                {
                    count++;
                }
            }

            return count;
        }
    }

    /// <summary>
    /// Owner only: gets how many slots a take from the shared stack should bring, the one it hands
    /// out included. More than one only with a refill credit, and then one fewer than the cache has
    /// room for, so that the slot handed out still fits when it comes back (a refill to the brim would
    /// make that release drain the cache, and a thread renting one object at a time would move a
    /// batch each way on every pair).
    /// </summary>
    public int RefillLimit => _refillCredits != 0 && Capacity - _top > 1 ? Capacity - _top : 1;

    /// <summary>Owner only: takes the newest slot it kept, unless the gate is closed or it kept none.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public object? TryTakeOwn(ForeignAccessGate gate)
    {
        object? taken = null;
        if (gate.TryBeginOwnerAccess(ref _busy))
        {
            int top = _top;
            while (top > 0)
            {
                top--;
                taken = _entries[top];
                if (taken is not null)
                {
                    _entries[top] = null;
                    break;
                }
            }

            _top = top;
            ForeignAccessGate.EndOwnerAccess(ref _busy);
        }

        return taken;
    }

    /// <summary>
    /// Owner only: keeps a slot the caller owns, unless the gate is closed or <see cref="_top"/> is at
    /// <see cref="Capacity"/> (the cache is full, or the owner returned that many times without a take).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryKeepOwn(object slot, ForeignAccessGate gate)
    {
        // Read outside the bracket: only the owner writes _top.
        int top = _top;
        if (top == Capacity || !gate.TryBeginOwnerAccess(ref _busy))
        {
            return false;
        }

        _entries[top] = slot;
        _top = top + 1;
        ForeignAccessGate.EndOwnerAccess(ref _busy);
        return true;
    }

    /// <summary>Owner only: records a take of <paramref name="count"/> slots from the shared stack, and spends a refill credit if it was a batch.</summary>
    public void OnSharedTake(int count)
    {
        _pushCredits = Math.Min(MaxCredits, _pushCredits + count);
        if (count > 1)
        {
            Debug.Assert(_refillCredits != 0, "A batch take needs a refill credit (see RefillLimit).");
            _refillCredits--;
        }
    }

    /// <summary>Owner only: records a push of <paramref name="count"/> slots onto the shared stack.</summary>
    public void OnSharedPush(int count) => _refillCredits = Math.Min(MaxCredits, _refillCredits + count);

    /// <summary>
    /// Owner only: empties a full cache into <paramref name="into"/>, oldest first, for the caller to
    /// push with the slot it could not keep, spending a push credit. Does nothing, and returns 0,
    /// unless the cache is full, the owner has a push credit and the gate is open.
    /// </summary>
    /// <returns>How many slots were moved into <paramref name="into"/>.</returns>
    /// <remarks>
    /// The whole cache, not part of it: keeping some back made the common long-rental loop slower.
    /// Until the caller pushes them, the slots moved are in no storage, so it pushes them at once and
    /// then does what a push owes (serving waiters, draining a disposed pool).
    /// </remarks>
    public int TryDrainOwn(Span<object?> into, ForeignAccessGate gate)
    {
        if (_top != Capacity || _pushCredits == 0 || !gate.TryBeginOwnerAccess(ref _busy))
        {
            return 0;
        }

        int count = 0;
        for (int i = 0; i < Capacity; i++)
        {
            if (_entries[i] is { } kept)
            {
                into[count++] = kept;
                _entries[i] = null;
            }
        }

        _top = 0;
        _pushCredits--;
        ForeignAccessGate.EndOwnerAccess(ref _busy);
        return count;
    }

    /// <summary>Foreigner only, inside the gate: empties this cache into <paramref name="into"/>, newest first.</summary>
    /// <param name="gate">The gate the caller is inside.</param>
    /// <param name="into">Where the slots go; room for <see cref="Capacity"/>.</param>
    /// <param name="waitForOwner">
    /// Whether to wait for an owner in the middle of a plain operation, so as to see a slot it is
    /// keeping right now. A waiter's look and Dispose must (nothing else will find that slot for
    /// them); an opportunistic taker skips a busy cache instead.
    /// </param>
    /// <returns>How many slots were moved into <paramref name="into"/>.</returns>
    public int StealAll(ForeignAccessGate gate, Span<object?> into, bool waitForOwner = true)
    {
        if (!gate.TryWaitForOwner(ref _busy, waitForOwner))
        {
            return 0;
        }

        int count = 0;
        for (int i = Capacity - 1; i >= 0; i--)
        {
            ref object? entry = ref _entries[i];
            if (Volatile.Read(ref entry) is not null && Interlocked.Exchange(ref entry, null) is { } taken)
            {
                into[count++] = taken;
            }
        }

        return count;
    }

    /// <summary>A cache's entries, inline in it: no separate array to reach.</summary>
    [InlineArray(Capacity)]
    internal struct Entries
    {
        private object? _first;
    }
}
