using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// Where a pool's slots live: a registry of every slot made and not yet discarded, and per thread a
/// cache of the slots that thread made idle, as hints of where to look first.
/// </summary>
/// <remarks>
/// <para>
/// Algorithm, after HikariCP's ConcurrentBag: the registry is the storage. A slot is idle because
/// its state says so, and it is taken by one compare-and-swap of that state (see
/// <see cref="PoolSlot{T}"/>), wherever the taker found it. A thread that returns a slot remembers it
/// in its own cache, and its next take tries those slots first, newest first: it touches only its
/// cache and the slots it used last, and no line another thread writes. Other threads never touch
/// that cache; when their own is empty they scan the registry and claim any idle slot. So a hint may
/// be stale (its slot taken by another thread since); its claim then fails and the owner tries the next.
/// </para>
/// <para>
/// A slot never moves between stores, so it is never in transit where a taker, waiter or Dispose
/// cannot see it. A cache holds as many hints as its thread shows it needs: when it is full, it
/// grows by as many slots as its thread has had to take from the registry since it last grew, up to
/// the pool's cap; otherwise its older hints make room. So a thread that takes many objects and
/// returns them all finds them all again, and one that only returns keeps a few.
/// </para>
/// <para>
/// Guarantees: takes and returns are lock-free (the registry lock is taken only when a slot is
/// made or discarded, and a cache's the first time its thread returns a slot); each time a slot is
/// made idle, one taker at most gets it. Not guaranteed: LIFO order across threads, fairness
/// between threads scanning at once, or an exact <see cref="IdleCount"/> while takes and returns run.
/// </para>
/// </remarks>
internal sealed class SlotStorage<T> where T : class
{
    // Threads whose managed id is this or more keep no cache, which bounds the table of a process
    // that has run very many threads at once.
    private const int MaxCachedThreadId = 4096;

    // The second bounds the memory of a thread that returns very many objects.
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

    // Slots made idle minus slots taken out of idle by threads that have no cache; see IdleCount.
    private int _uncachedIdleBalance;

    /// <param name="maxCapacity">The pool's cap: no thread needs hints for more slots than that.</param>
    public SlotStorage(int maxCapacity)
    {
        _maxCacheLength = (int)Math.Min(MaxCacheLength, BitOperations.RoundUpToPowerOf2((uint)Math.Max(maxCapacity, InitialCacheLength)));
    }

    /// <summary>
    /// Gets how many slots are idle: exact when no take or return is in flight, otherwise a snapshot
    /// that may be off by those in flight. Costs a read per thread that has returned a slot.
    /// </summary>
    public int IdleCount
    {
        get
        {
            int count = Volatile.Read(ref _uncachedIdleBalance);
            foreach (ThreadSlotCache? cache in Volatile.Read(ref _caches))
            {
                count += cache is null ? 0 : Volatile.Read(ref cache.IdleBalance);
            }

            return count;
        }
    }

    /// <summary>
    /// Gets every slot made and not yet discarded, for a scan that may miss a slot registered or
    /// discarded during it: an entry is a slot or <see langword="null"/>.
    /// </summary>
    public PoolSlot<T>?[] Registered => Volatile.Read(ref _slots);

    /// <summary>Gets the lock that guards the registry and the cache table; for tests that contend it.</summary>
    public UninterruptibleLock Lock => _lock;

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
    /// Takes the newest idle slot among those the calling thread made idle, if it kept any: the fast
    /// path of a take. A retired slot is passed over, for <see cref="TryClaimAny"/> to find.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryTakeOwn([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        ThreadSlotCache?[] caches = _caches;
        int threadId = CurrentThreadId.Value;
        if ((uint)threadId < (uint)caches.Length && caches[threadId] is { } cache)
        {
            int top = cache.Count - 1;
            int[] entries = cache.Entries;
            PoolSlot<T>?[] slots = Volatile.Read(ref _slots);
            if ((uint)top < (uint)entries.Length && (uint)entries[top] < (uint)slots.Length
                && slots[entries[top]] is { } newest && newest.TryClaimIdle())
            {
                cache.Count = top;
                Volatile.Write(ref cache.IdleBalance, cache.IdleBalance - 1);
                slot = newest;
                return true;
            }

            if (top >= 0)
            {
                return TryTakeOlder(cache, slots, out slot);
            }
        }

        slot = null;
        return false;
    }

    /// <summary>
    /// Remembers a slot the calling thread has just made idle, so that its next take tries it first;
    /// the fast path of a return.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void KeepOwn(PoolSlot<T> slot)
    {
        ThreadSlotCache?[] caches = _caches;
        int threadId = CurrentThreadId.Value;
        if ((uint)threadId < (uint)caches.Length && caches[threadId] is { } cache)
        {
            int count = cache.Count;
            int[] entries = cache.Entries;
            if ((uint)count < (uint)entries.Length)
            {
                entries[count] = slot.Index;
                cache.Count = count + 1;
                Volatile.Write(ref cache.IdleBalance, cache.IdleBalance + 1);
                return;
            }
        }

        KeepOverflowing(slot, threadId);
    }

    /// <summary>Counts a slot made idle that no thread keeps a hint of (a pre-warmed one); every taker finds it in the registry.</summary>
    public void CountIdle() => AdjustIdleBalance(1);

    /// <summary>
    /// Takes any idle slot, retired or not, scanning the registry from where the calling thread's last
    /// scan stopped; the caller discards a retired one. Costs a read per slot looked at.
    /// </summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="forCaller">
    /// Whether the calling thread takes it for itself, and so will return it here: its cache then
    /// grows to hold it next time. Not when it takes it for a waiter.
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
            if (slots[index] is { } candidate && candidate.IsIdle && candidate.TryClaimAnyIdle())
            {
                if (cache is not null)
                {
                    cache.ScanFrom = index + 1;
                    cache.TakenFromRegistry = forCaller ? Math.Min(cache.TakenFromRegistry + 1, _maxCacheLength) : cache.TakenFromRegistry;
                }

                AdjustIdleBalance(-1);
                slot = candidate;
                return true;
            }
        }

        slot = null;
        return false;
    }

    /// <summary>Takes one given slot if it is idle, retired or not; the caller discards a retired one.</summary>
    public bool TryClaim(PoolSlot<T> slot)
    {
        if (!slot.TryClaimAnyIdle())
        {
            return false;
        }

        AdjustIdleBalance(-1);
        return true;
    }

    /// <summary>Counts the slots whose state says idle, one by one; for tests that check the balance.</summary>
    public int CountIdleSlots() => Registered.Count(slot => slot is not null && slot.IsIdle);

    /// <summary>The rest of <see cref="TryTakeOwn"/>: the newest hint was stale, so try the older ones, newest first.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool TryTakeOlder(ThreadSlotCache cache, PoolSlot<T>?[] slots, [NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        int[] entries = cache.Entries;
        for (int top = cache.Count - 1; top >= 0; top--)
        {
            if ((uint)entries[top] < (uint)slots.Length && slots[entries[top]] is { IsIdle: true } candidate && candidate.TryClaimIdle())
            {
                cache.Count = top;
                Volatile.Write(ref cache.IdleBalance, cache.IdleBalance - 1);
                slot = candidate;
                return true;
            }
        }

        cache.Count = 0;
        slot = null;
        return false;
    }

    /// <summary>
    /// The rest of <see cref="KeepOwn"/>: the calling thread has no cache yet, or its cache is full.
    /// A full cache grows by as many slots as its thread has taken from the registry since it last
    /// grew (its hints were too few for what it holds at once); otherwise its older half makes room.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void KeepOverflowing(PoolSlot<T> slot, int threadId)
    {
        if (threadId >= MaxCachedThreadId)
        {
            Interlocked.Increment(ref _uncachedIdleBalance);
            return;
        }

        ThreadSlotCache cache = OwnCache()!;
        int[] entries = cache.Entries;
        if (cache.Count == entries.Length)
        {
            if (cache.TakenFromRegistry != 0 && entries.Length < _maxCacheLength)
            {
                Array.Resize(ref entries, Math.Min(_maxCacheLength, (int)BitOperations.RoundUpToPowerOf2((uint)(entries.Length + cache.TakenFromRegistry))));
                cache.Entries = entries;
                cache.TakenFromRegistry = 0;
            }
            else
            {
                // The older half makes room, so that a thread that only returns shifts its hints once per half a cache.
                int kept = entries.Length / 2;
                Array.Copy(entries, entries.Length - kept, entries, 0, kept);
                cache.Count = kept;
            }
        }

        entries[cache.Count] = slot.Index;
        cache.Count++;
        Volatile.Write(ref cache.IdleBalance, cache.IdleBalance + 1);
    }

    /// <summary>Adds to the calling thread's count of slots it made idle minus those it took out of idle.</summary>
    private void AdjustIdleBalance(int delta)
    {
        if (OwnCacheOrNull() is { } cache)
        {
            Volatile.Write(ref cache.IdleBalance, cache.IdleBalance + delta);
        }
        else
        {
            Interlocked.Add(ref _uncachedIdleBalance, delta);
        }
    }

    /// <summary>Gets the calling thread's cache, made now if need be; <see langword="null"/> for a thread whose id is too high to have one.</summary>
    private ThreadSlotCache? OwnCache()
    {
        int threadId = CurrentThreadId.Value;
        return OwnCacheOrNull() ?? (threadId < MaxCachedThreadId ? CreateOwnCache(threadId) : null);
    }

    private ThreadSlotCache? OwnCacheOrNull()
    {
        ThreadSlotCache?[] caches = _caches;
        int threadId = CurrentThreadId.Value;
        return (uint)threadId < (uint)caches.Length ? caches[threadId] : null;
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
    /// One thread's hints: the first <see cref="Count"/> entries are slots it made idle, newest last.
    /// Only the owner thread reads or writes it, but for <see cref="IdleBalance"/>, which others read
    /// to count idle slots.
    /// </summary>
    private sealed class ThreadSlotCache
    {
        // Registry indices rather than references: storing an int needs no GC write barrier. An index
        // whose slot was discarded since may hold another slot now; a hint is only ever a place to look.
        public int[] Entries = new int[InitialCacheLength];
        public int Count;

        // Where the owner's next registry scan starts, so that its scans do not all begin at one slot.
        public int ScanFrom;

        // How many slots the owner has taken from the registry since its cache last grew, at most
        // the longest cache: how many more hints it would have needed.
        public int TakenFromRegistry;

        // Slots this thread made idle minus slots it took out of idle; written by the owner only.
        public int IdleBalance;

#pragma warning disable CS0169 // Never read: it only takes up room (see CacheLinePadding).
        private CacheLinePadding _padding;
#pragma warning restore CS0169
    }
}
