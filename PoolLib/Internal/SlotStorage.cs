using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// Where a pool's idle slots wait: a small cache per thread (<see cref="ThreadSlotCache"/>) in front
/// of a shared lock-free stack (<see cref="SlotStack{T}"/>).
/// </summary>
/// <remarks>
/// <para>
/// Algorithm: a store first tries the calling thread's own cache, then pushes onto the stack
/// (<see cref="PushShared"/>). A take first tries the caller's own cache (<see cref="TryTakeOwn"/>),
/// then pops the stack (<see cref="TryPopSharedAndRefill"/>), then, inside the
/// <see cref="ForeignAccessGate"/>, empties any thread's cache (<see cref="TrySteal"/>). A thread
/// that takes and returns works on its own cache with plain reads and writes (no interlocked
/// operation, no shared cache line) and allocates nothing; neither does the stack, whose nodes are
/// the slots themselves.
/// </para>
/// <para>
/// Batches: a pop from the stack may move a few more slots into the taker's cache with the same
/// swap, and a push from a full cache may take the whole cache with it, so a thread that takes many
/// objects and then returns them all pays about one swap on the shared head per cache-full of
/// objects instead of one per object. When to batch, and how much, is the cache's policy
/// (see <see cref="ThreadSlotCache"/>); this type only moves the slots.
/// </para>
/// <para>
/// While the gate is closed (someone is stealing, a taker waits, or the pool is disposed), owners
/// neither keep nor take from their caches: every store goes to the stack, where waiters and
/// thieves find it with one pop, and caches only drain.
/// </para>
/// <para>
/// Guarantees: lock-free except that a thief waits for an owner that is in the middle of a plain
/// operation on its own cache (a few instructions, unless the owner is preempted there); every slot
/// stored is taken at most once; <see cref="TrySteal"/> returning <see langword="false"/> while waiting
/// for busy owners means every cache was empty when the thief looked at it after entering the gate
/// (a thief that skips busy owners may also have passed over a cache in use). Not guaranteed: LIFO order
/// across caches, or a consistent <see cref="Count"/> while stores and takes are in flight.
/// </para>
/// </remarks>
internal sealed class SlotStorage<T> where T : class
{
    // Threads whose managed id is this or more keep no cache and use the stack only, which bounds
    // the cache table of a process that has run very many threads at once.
    private const int MaxCachedThreadId = 4096;

    // Indexed by managed thread id; an entry, once set, is never replaced, and a larger table
    // copies every entry. Written under _cachesLock, read without it (Volatile.Read by thieves;
    // an owner may read a stale table, which still holds its own cache if it had one).
    private ThreadSlotCache?[] _caches = new ThreadSlotCache?[16];
    private readonly UninterruptibleLock _cachesLock = new();

    private readonly ForeignAccessGate _gate = new();
    private readonly SlotStack<T> _stack = new();

    /// <summary>
    /// Gets how many slots are stored. Exact when no store or take is in flight; otherwise a snapshot
    /// that may count a slot moving between a cache and the stack twice, or miss it.
    /// </summary>
    public int Count
    {
        get
        {
            int count = _stack.Count;
            foreach (ThreadSlotCache? cache in Volatile.Read(ref _caches))
            {
                count += cache?.Count ?? 0;
            }

            return count;
        }
    }

    /// <summary>Makes a new slot storable; called once when its object is created.</summary>
    public void Register(PoolSlot<T> slot) => _stack.Register(slot);

    /// <summary>Gets every slot made and not yet discarded, idle or rented; see <see cref="SlotStack{T}.Registered"/>.</summary>
    public PoolSlot<T>?[] Registered => _stack.Registered;

    /// <summary>Forgets a discarded slot, which is in no cache and not in the stack.</summary>
    public void Unregister(PoolSlot<T> slot) => _stack.Unregister(slot);

    /// <summary>Gets whether the gate is closed (some thread is inside it); for tests that check nothing is left behind.</summary>
    public bool IsGateClosed => _gate.IsClosed;

    /// <summary>Gets the lock that guards the cache table; for tests that contend it.</summary>
    public UninterruptibleLock CacheTableLock => _cachesLock;

    /// <summary>Gets the lock that guards the stack's slot registry; for tests that contend it.</summary>
    public UninterruptibleLock RegistryLock => _stack.RegistryLock;

    /// <summary>Registers the caller as a thread that may take from other threads' caches; see <see cref="ForeignAccessGate"/>.</summary>
    public void EnterForeign() => _gate.Enter();

    /// <summary>Undoes one <see cref="EnterForeign"/>.</summary>
    public void ExitForeign() => _gate.Exit();

    /// <summary>Takes the newest slot the calling thread kept, if the gate is open. The cheapest way out.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryTakeOwn([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        ThreadSlotCache?[] caches = _caches;
        int threadId = Environment.CurrentManagedThreadId;
        if ((uint)threadId < (uint)caches.Length && caches[threadId]?.TryTakeOwn(_gate) is { } taken)
        {
            slot = Unsafe.As<PoolSlot<T>>(taken);
            return true;
        }

        slot = null;
        return false;
    }

    /// <summary>Keeps a slot the caller owns and has marked in-pool in the calling thread's cache, if the gate is open and the cache has room.</summary>
    /// <param name="slot">The slot to keep.</param>
    /// <param name="threadId">The calling thread's managed id.</param>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryKeepOwn(PoolSlot<T> slot, int threadId)
    {
        Debug.Assert(slot.IsInPool);
        Debug.Assert(threadId == Environment.CurrentManagedThreadId, "Only the owner touches its cache plainly.");

        return OwnCache(threadId)?.TryKeepOwn(slot, _gate) ?? false;
    }

    /// <summary>
    /// Stores a slot the caller owns and has marked in-pool on the shared stack, with the calling
    /// thread's whole cache in the same swap if the cache's policy says so (see <see cref="ThreadSlotCache.TryDrainOwn"/>).
    /// </summary>
    public void PushShared(PoolSlot<T> slot)
    {
        Debug.Assert(slot.IsInPool);

        ThreadSlotCache? cache = OwnCache();
        ThreadSlotCache.Entries drained = default;
        int count = cache?.TryDrainOwn(drained, _gate) ?? 0;
        if (count != 0)
        {
            _stack.PushBatch(((ReadOnlySpan<object?>)drained)[..count], slot);
        }
        else
        {
            _stack.Push(slot);
        }

        cache?.OnSharedPush(count + 1);
    }

    /// <summary>
    /// Takes the newest slot on the shared stack and, as the calling thread's cache allows
    /// (<see cref="ThreadSlotCache.RefillLimit"/>, and never more than half the stack), moves a few
    /// more into that cache with the same swap, so that the thread's next takes are plain reads and writes.
    /// </summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="pushedBack">
    /// Whether some of the slots moved could not be kept (the gate was closed) and went back
    /// onto the stack; the caller then owes what follows any push: serving waiters, draining a disposed pool.
    /// </param>
    /// <remarks>
    /// Why: a thread that takes many objects before it returns any (a long rental) would otherwise
    /// pay a compare-and-swap on the shared head for every take. Between the swap and the keep, the
    /// moved slots are in no storage; they are kept by the same protocol as a release (the keep
    /// fails once the gate is closed), so a waiter or Dispose either finds them in the cache or
    /// sees them pushed back.
    /// </remarks>
    public bool TryPopSharedAndRefill([NotNullWhen(true)] out PoolSlot<T>? slot, out bool pushedBack)
    {
        pushedBack = false;
        ThreadSlotCache? cache = OwnCache();

        slot = _stack.PopBatch(cache?.RefillLimit ?? 1, out int count);
        if (slot is null)
        {
            return false;
        }

        cache?.OnSharedTake(count);
        if (count == 1)
        {
            return true;
        }

        Debug.Assert(cache is not null, "Only a thread with a cache takes more than one.");

        // Kept in the order they were popped, so the owner's next take gets the deepest of them:
        // the other order needs a copy of the batch first, which costs more than warmth pays back.
        PoolSlot<T> moved = _stack.NextPopped(slot);
        for (int i = 1; i < count; i++)
        {
            // Read the link first: once kept or pushed, the slot may be taken and relinked by anyone.
            PoolSlot<T>? following = i + 1 < count ? _stack.NextPopped(moved) : null;
            if (!cache.TryKeepOwn(moved, _gate))
            {
                _stack.Push(moved);
                pushedBack = true;
            }

            moved = following!;
        }

        return true;
    }

    /// <summary>Whether any thread's cache looks non-empty; a hint to skip entering the gate for nothing.</summary>
    public bool MayHoldCached()
    {
        foreach (ThreadSlotCache? cache in Volatile.Read(ref _caches))
        {
            if (cache is not null && cache.Count != 0)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Takes a slot from any thread's cache, the caller's included, and moves the rest of that cache
    /// onto the shared stack. The caller must be inside the gate.
    /// </summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="pushedBack">
    /// Whether other slots went onto the stack; the caller then owes what follows any push: serving
    /// waiters, draining a disposed pool.
    /// </param>
    /// <param name="waitForOwners">
    /// Whether to wait for owners in the middle of a plain operation on their cache; only a caller
    /// that must not miss a slot being kept right now needs to (see <see cref="ThreadSlotCache.StealAll"/>).
    /// </param>
    /// <remarks>
    /// Why the whole cache: every entry of the gate may cost a process-wide barrier, and a cache
    /// whose owner does not take from it (it has ended, or it holds more than it needs) would
    /// otherwise cost one for each slot in it. On the stack every taker finds them with a pop.
    /// </remarks>
    public bool TrySteal([NotNullWhen(true)] out PoolSlot<T>? slot, out bool pushedBack, bool waitForOwners = true)
    {
        Debug.Assert(_gate.IsClosed, "Only a thread inside the gate may take from others' caches.");

        ThreadSlotCache.Entries stolen = default;
        foreach (ThreadSlotCache? cache in Volatile.Read(ref _caches))
        {
            int count = cache?.StealAll(_gate, stolen, waitForOwners) ?? 0;
            if (count == 0)
            {
                continue;
            }

            slot = Unsafe.As<PoolSlot<T>>(stolen[0]!);
            pushedBack = count > 1;
            if (pushedBack)
            {
                _stack.PushBatch(((ReadOnlySpan<object?>)stolen)[2..count], Unsafe.As<PoolSlot<T>>(stolen[1]!));
            }

            return true;
        }

        slot = null;
        pushedBack = false;
        return false;
    }

    /// <summary>
    /// Takes any stored slot, the stack first; the caller must be inside the gate. A steal may move
    /// other slots onto the stack: callers look again until they have what they need.
    /// </summary>
    public bool TryTakeAny([NotNullWhen(true)] out PoolSlot<T>? slot) => _stack.TryPop(out slot) || TrySteal(out slot, out _);

    /// <summary>Gets the calling thread's cache, creating it if need be; <see langword="null"/> if its id is too high to have one.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private ThreadSlotCache? OwnCache() => OwnCache(Environment.CurrentManagedThreadId);

    /// <summary>The same as <see cref="OwnCache()"/>, for a caller that has read its thread's managed id already.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private ThreadSlotCache? OwnCache(int threadId)
    {
        ThreadSlotCache?[] caches = _caches;
        ThreadSlotCache? cache = (uint)threadId < (uint)caches.Length ? caches[threadId] : null;
        return cache ?? CreateOwnCache(threadId);
    }

    /// <summary>Gives the calling thread its cache; <see langword="null"/> if its id is too high to have one.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private ThreadSlotCache? CreateOwnCache(int threadId)
    {
        if (threadId >= MaxCachedThreadId)
        {
            return null;
        }

        using (_cachesLock.EnterScope())
        {
            ThreadSlotCache?[] caches = _caches;
            if (threadId >= caches.Length)
            {
                Array.Resize(ref caches, Math.Min(MaxCachedThreadId, Math.Max(threadId + 1, caches.Length * 2)));
            }

            ThreadSlotCache cache = caches[threadId] ??= new ThreadSlotCache();
            Volatile.Write(ref _caches, caches);
            return cache;
        }
    }
}
