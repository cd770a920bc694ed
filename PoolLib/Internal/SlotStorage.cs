using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// Where a pool's slots live: a registry of every slot made and not yet discarded, which is the
/// storage itself (a slot is idle because its state says so, and is taken by a compare-and-swap of
/// that state wherever the taker found it), and per thread a cache of hints: the slots that thread
/// took, which it tries first once they are back. Invariant: a slot is in the registry from creation
/// to discard and never moves, so no idle slot is out of reach of a taker, a waiter or Dispose; a
/// hint may be stale. A release touches no cache. Lock-free but for making and discarding slots.
/// </summary>
internal sealed class SlotStorage<T> where T : class
{
    // Threads whose managed id is this or more keep no cache, which bounds the table of a process
    // that has run very many threads at once.
    private const int MaxCachedThreadId = 4096;

    // The second bounds the memory of a thread that takes very many objects.
    private const int InitialCacheLength = 8;
    private const int MaxCacheLength = 1 << 16;

    private readonly int _maxCacheLength;

    // Guarded by _lock for writes; read without it through Volatile.Read. Every slot registered sits
    // at its Index; a slot is written here before it is first made idle, so whoever sees it idle can
    // find it. Entries at and above _registeredCount are null.
    private PoolSlot<T>?[] _slots = new PoolSlot<T>?[4];
    private int _registeredCount;
    private readonly Stack<int> _freeIndices = new();

    // Indexed by managed thread id; an entry, once set, is never replaced, and a larger table copies
    // every entry. Written under _lock, read without it.
    private ThreadSlotCache?[] _caches = new ThreadSlotCache?[16];

    // Uninterruptible: every holder is halfway through making or discarding a slot.
    private readonly UninterruptibleLock _lock = new();

    /// <param name="maxCapacity">The pool's cap: no thread needs hints for more slots than that.</param>
    public SlotStorage(int maxCapacity)
    {
        _maxCacheLength = (int)Math.Min(MaxCacheLength, BitOperations.RoundUpToPowerOf2((uint)Math.Max(maxCapacity, InitialCacheLength)));
    }

    /// <summary>
    /// Gets every slot made and not yet discarded, for a scan that may miss a slot registered or
    /// discarded during it: an entry is a slot or <see langword="null"/>.
    /// </summary>
    public PoolSlot<T>?[] Registered => Volatile.Read(ref _slots);

    /// <summary>Gets the lock that guards the registry and the cache table; for tests that contend it.</summary>
    public UninterruptibleLock Lock => _lock;

    /// <summary>
    /// Counts the slots whose state says idle, retired ones included: exact when no take or release
    /// is in flight, otherwise a snapshot. Costs a read per slot.
    /// </summary>
    public int CountIdle()
    {
        int count = 0;
        foreach (PoolSlot<T>? slot in Registered)
        {
            count += slot is { IsIdle: true } ? 1 : 0;
        }

        return count;
    }

    /// <summary>Makes a new slot findable; call once, before it is first made idle.</summary>
    public void Register(PoolSlot<T> slot)
    {
        using (_lock.EnterScope())
        {
            int index = _freeIndices.Count > 0 ? _freeIndices.Pop() : _registeredCount++;
            PoolSlot<T>?[] slots = _slots;
            if (index >= slots.Length)
            {
                Array.Resize(ref slots, slots.Length * 2);
            }

            Debug.Assert(slots[index] is null);
            slot.Index = index;
            slots[index] = slot;
            Volatile.Write(ref _slots, slots);
        }
    }

    /// <summary>Forgets a discarded slot.</summary>
    public void Unregister(PoolSlot<T> slot)
    {
        using (_lock.EnterScope())
        {
            Debug.Assert(ReferenceEquals(_slots[slot.Index], slot));
            _slots[slot.Index] = null;
            _freeIndices.Push(slot.Index);
        }
    }

    /// <summary>
    /// Takes an idle slot among those the calling thread took before, the most recently taken first:
    /// the fast path of a take. A retired slot is passed over, for <see cref="TryClaimAny"/> to find.
    /// </summary>
    /// <remarks>
    /// A cache's first <see cref="ThreadSlotCache.Ready"/> hints are slots its thread took before and
    /// has not taken again since they were last made ready; the rest are slots it took since. When
    /// none is ready, all are made ready again if the most recently taken is back: a thread that
    /// returned its last take has most likely returned the others too, and one that still holds it
    /// (in the middle of a long rental) looks no further than that one slot. Only the owner touches
    /// its cache, so a take reads and writes no line another thread writes but the slot's own.
    /// </remarks>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryTakeOwn([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        ThreadSlotCache?[] caches = _caches;
        int threadId = CurrentThreadId.Value;
        if ((uint)threadId < (uint)caches.Length && caches[threadId] is { } cache)
        {
            int ready = cache.Ready;
            bool renewing = ready == 0;
            ready = (renewing ? cache.Count : ready) - 1;
            int[] entries = cache.Entries;
            PoolSlot<T>?[] slots = Volatile.Read(ref _slots);
            if ((uint)ready < (uint)entries.Length && (uint)entries[ready] < (uint)slots.Length
                && slots[entries[ready]] is { } newest && newest.TryClaimIdle())
            {
                cache.Ready = ready;
                slot = newest;
                return true;
            }

            if (!renewing)
            {
                return TryTakeReady(cache, slots, out slot);
            }
        }

        slot = null;
        return false;
    }

    /// <summary>
    /// Takes any idle slot, retired or not, scanning the registry from where the calling thread's last
    /// scan stopped; the caller discards a retired one. Costs a read per slot looked at.
    /// </summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="forCaller">
    /// Whether the calling thread takes it for itself: it is then hinted in that thread's cache, to be
    /// found there once it is back. Not when it takes it for a waiter.
    /// </param>
    public bool TryClaimAny([NotNullWhen(true)] out PoolSlot<T>? slot, bool forCaller = true)
    {
        PoolSlot<T>?[] slots = Volatile.Read(ref _slots);
        int length = Math.Min(slots.Length, Volatile.Read(ref _registeredCount));
        ThreadSlotCache? cache = OwnCache();
        int start = cache is null || cache.ScanFrom >= length ? 0 : cache.ScanFrom;
        for (int i = 0; i < length; i++)
        {
            int index = start + i < length ? start + i : start + i - length;
            if (slots[index] is { IsIdle: true } candidate && candidate.TryClaimAnyIdle())
            {
                if (cache is not null)
                {
                    cache.ScanFrom = index + 1;
                }

                if (forCaller)
                {
                    NoteTaken(candidate);
                }

                slot = candidate;
                return true;
            }
        }

        slot = null;
        return false;
    }

    /// <summary>Hints a slot the calling thread has just taken from elsewhere than its cache (made, or handed to it), to be tried first once it is back.</summary>
    public void NoteTaken(PoolSlot<T> slot)
    {
        if (OwnCache() is not { } cache)
        {
            return;
        }

        int[] entries = cache.Entries;
        if (cache.Count == entries.Length)
        {
            if (entries.Length == _maxCacheLength)
            {
                return;
            }

            Array.Resize(ref entries, entries.Length * 2);
            cache.Entries = entries;
        }

        entries[cache.Count++] = slot.Index;
    }

    /// <summary>Takes one given slot if it is idle, retired or not; the caller discards a retired one.</summary>
    public bool TryClaim(PoolSlot<T> slot) => slot.TryClaimAnyIdle();

    /// <summary>
    /// The rest of <see cref="TryTakeOwn"/>: the newest ready hint was stale (another thread holds its
    /// slot, or it was discarded). Drops it and tries the other ready hints, newest first, dropping
    /// stale ones likewise; a hint's place goes to the last hint, which is not ready.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool TryTakeReady(ThreadSlotCache cache, PoolSlot<T>?[] slots, [NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        int[] entries = cache.Entries;
        while (cache.Ready > 0)
        {
            int ready = --cache.Ready;
            if ((uint)entries[ready] < (uint)slots.Length && slots[entries[ready]] is { IsIdle: true } candidate && candidate.TryClaimIdle())
            {
                slot = candidate;
                return true;
            }

            entries[ready] = entries[--cache.Count];
        }

        slot = null;
        return false;
    }

    /// <summary>Gets the calling thread's cache, made now if need be; <see langword="null"/> for a thread whose id is too high to have one.</summary>
    private ThreadSlotCache? OwnCache()
    {
        ThreadSlotCache?[] caches = _caches;
        int threadId = CurrentThreadId.Value;
        if ((uint)threadId < (uint)caches.Length && caches[threadId] is { } cache)
        {
            return cache;
        }

        return threadId < MaxCachedThreadId ? CreateOwnCache(threadId) : null;
    }

    private ThreadSlotCache CreateOwnCache(int threadId)
    {
        using (_lock.EnterScope())
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

    /// <summary>
    /// One thread's hints, the registry indices of slots it took: <see cref="Ready"/> of them first,
    /// to try on its next takes, newest last; then, up to <see cref="Count"/>, those it took since
    /// they were last made ready. Only the owner thread reads or writes it.
    /// </summary>
    private sealed class ThreadSlotCache
    {
        // Indices rather than references: storing an int needs no GC write barrier. An index whose
        // slot was discarded since may hold another slot now; a hint is only ever a place to look.
        public int[] Entries = new int[InitialCacheLength];
        public int Count;
        public int Ready;

        // Where the owner's next registry scan starts, so that its scans do not all begin at one slot.
        public int ScanFrom;

#pragma warning disable CS0169 // Never read: it only takes up room (see CacheLinePadding).
        private CacheLinePadding _padding;
#pragma warning restore CS0169
    }
}
