using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace PoolLib.Internal;

/// <summary>
/// A few idle slots kept by one thread for itself, so that a thread that takes and returns touches
/// only memory it owns, with no interlocked operation. Other threads may take from it through a
/// <see cref="ForeignAccessGate"/>.
/// </summary>
/// <remarks>
/// <para>
/// Ownership: one cache per pool per managed thread id. Only the thread with that id (the owner)
/// adds entries or moves <see cref="_top"/>. A thread's id is reused only after the thread is
/// gone, so there is never more than one owner at a time.
/// </para>
/// <para>
/// Invariants. (1) An entry holds <see langword="null"/> or a slot that is in the pool, and a slot
/// is in at most one entry, and then not in the shared stack. (2) The owner reads and writes the
/// entries plainly only between setting and clearing <see cref="_busy"/>, and only after reading
/// the gate open in between. (3) A foreigner touches entries only inside the gate, after seeing
/// <see cref="_busy"/> clear (it waits for that, or leaves the cache alone), and only by
/// <see cref="Interlocked.Exchange{T}(ref T, T)"/> with <see langword="null"/>, so of any number of
/// foreigners exactly one gets each slot. By the gate's handshake, (2) and (3) never overlap in
/// time on one cache.
/// </para>
/// <para>
/// <see cref="_top"/> falls only when the owner takes (or empties its full cache, see Batches
/// below), never when a foreigner empties an entry. So a thread that only returns (one that hands
/// objects back for takers on other threads, like the UDP server's replier) stops keeping after
/// <see cref="Capacity"/> returns, and from then on its returns go where those takers look first,
/// the shared stack, instead of waiting to be stolen.
/// </para>
/// <para>
/// Batches: a take from the shared stack may bring a few more slots into the cache with the same
/// swap (spending a refill credit), and a release that finds the cache full may push the whole
/// cache with it in one swap (spending a push credit, <see cref="TryDrainOwn"/>), which also lowers
/// <see cref="_top"/>. Each slot taken from the stack earns a push credit
/// (<see cref="NoteSharedTake"/>), and each slot pushed onto it a refill credit
/// (<see cref="NoteSharedPush"/>). So batches flow only for a thread that has done both, like one
/// that takes many objects and then returns them all: a thread that has only returned keeps the
/// limit above, and one that has only taken (like the threads that run a server's receive loop,
/// whose objects are returned elsewhere) takes one at a time instead of parking slots in its cache
/// while other threads run short. The credits count a thread's whole history (up to a bound), not
/// only its recent past, so a thread-pool thread that changes roles may batch for a while in its
/// new one.
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
    public const int Capacity = ThreadSlotCacheEntries.Length;

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
    private ThreadSlotCacheEntries _entries;

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

    /// <summary>Owner only: takes the newest slot it kept, unless the gate is closed or it kept none.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public object? TryTakeOwn(ForeignAccessGate gate)
    {
        object? taken = null;
        Volatile.Write(ref _busy, 1);
        if (!gate.IsClosed)
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
        }

        Volatile.Write(ref _busy, 0);
        return taken;
    }

    /// <summary>
    /// Owner only: keeps a slot the caller owns, unless the gate is closed or <see cref="_top"/> is at
    /// <see cref="Capacity"/> (the cache is full, or the owner returned that many times without a take).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryKeepOwn(object slot, ForeignAccessGate gate)
    {
        bool kept = false;
        Volatile.Write(ref _busy, 1);
        int top = _top;
        if (top < Capacity && !gate.IsClosed)
        {
            _entries[top] = slot;
            _top = top + 1;
            kept = true;
        }

        Volatile.Write(ref _busy, 0);
        return kept;
    }

    /// <summary>Owner only: gets how many more slots <see cref="TryKeepOwn"/> would keep if the gate stays open.</summary>
    public int Room => Capacity - _top;

    /// <summary>Owner only: notes that the owner took <paramref name="count"/> slots from the shared stack, which earns it as many batch pushes (see <see cref="TryDrainOwn"/>).</summary>
    public void NoteSharedTake(int count) => _pushCredits = Math.Min(MaxCredits, _pushCredits + count);

    /// <summary>Owner only: notes that the owner pushed <paramref name="count"/> slots onto the shared stack, which earns it as many batch takes (see <see cref="SpendRefillCredit"/>).</summary>
    public void NoteSharedPush(int count) => _refillCredits = Math.Min(MaxCredits, _refillCredits + count);

    /// <summary>Owner only: gets whether the owner may take a batch from the shared stack into its cache.</summary>
    public bool HasRefillCredit => _refillCredits != 0;

    /// <summary>Owner only: spends a refill credit on a take from the shared stack that brought more slots into the cache.</summary>
    public void SpendRefillCredit()
    {
        Debug.Assert(_refillCredits != 0);
        _refillCredits--;
    }

    /// <summary>
    /// Owner only: empties a full cache into <paramref name="into"/>, oldest first, for the caller
    /// to push with the slot it could not keep, and spends a push credit. Does nothing, and returns 0,
    /// unless the gate is open, the cache is full (<see cref="_top"/> at <see cref="Capacity"/>) and
    /// the owner has a credit.
    /// </summary>
    /// <returns>How many slots were moved into <paramref name="into"/>.</returns>
    /// <remarks>
    /// Why the whole cache: keeping the newest two would spare a thread that returns a little more
    /// than it takes from emptying its cache and refilling it every few operations, but it made a
    /// one-thread long rental 1 ns a pair slower (20.2-20.5 ns against 19.2-19.5), and the full run
    /// of that variant had 25 workers at capacity 1,024 at 104 ns a pair against 25-34 in the runs
    /// before it (on a machine whose timings drift; not confirmed).
    /// </remarks>
    public int TryDrainOwn(Span<object?> into, ForeignAccessGate gate)
    {
        // Both are the owner's own fields: no need to be busy to read them.
        if (_top != Capacity || _pushCredits == 0)
        {
            return 0;
        }

        int count = 0;
        Volatile.Write(ref _busy, 1);
        if (!gate.IsClosed)
        {
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
        }

        Volatile.Write(ref _busy, 0);
        return count;
    }

    /// <summary>Foreigner only, inside the gate: takes any slot this cache holds.</summary>
    /// <param name="waitForOwner">
    /// Whether to wait for an owner in the middle of a plain operation, so as to see a slot it is
    /// keeping right now. A waiter's first look and Dispose must (nothing else will find that slot
    /// for them); an opportunistic taker skips a busy cache instead.
    /// </param>
    public object? Steal(bool waitForOwner = true)
    {
        // The owner may have read the gate open just before it closed; let it finish (invariant 2),
        // or leave this cache alone: touching its entries while it is busy is never allowed.
        var backoff = new RetryBackoff();
        while (Volatile.Read(ref _busy) != 0)
        {
            if (!waitForOwner)
            {
                return null;
            }

            backoff.Wait();
        }

        for (int i = Capacity - 1; i >= 0; i--)
        {
            ref object? entry = ref _entries[i];
            if (Volatile.Read(ref entry) is not null && Interlocked.Exchange(ref entry, null) is { } taken)
            {
                return taken;
            }
        }

        return null;
    }
}
