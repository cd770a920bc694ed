using System.Diagnostics;

namespace PoolLib.Internal;

/// <summary>
/// Every slot a pool has made and not yet discarded, each at its place (<see cref="IndexOf"/>): what Trim, Clear,
/// Dispose and maintenance walk, and what a thread's hints (indices) point into. The array shrinks with the slots,
/// so walks and memory follow the objects that exist now; it shrinks in steps of <see cref="DefaultCompactionStep"/>
/// entries, one with each later Add or Remove, so that no single one pays for the pool's size.
/// </summary>
internal sealed class SlotRegistry<T> where T : class
{
    /// <summary>How many entries one Add or Remove copies while a compaction is under way: microseconds under the lock.</summary>
    public const int DefaultCompactionStep = 256;

    private const int MinLength = 16;

    // The longest array a Remove allocates itself; a longer one, whose zeroing would hold one release, is allocated on
    // the thread pool, and the compaction begins with the first operation after it.
    private const int InlineAllocationLimit = 32_768;

    private readonly int _compactionStep;

    // Guarded by _lock for writes; read without it. Entries at and above _length are null, and so are the freed indices
    // below it; every slot in it is at its place of parity _generation. A compaction fills _next beside it and then
    // publishes _next in one write: readers of the old array see every slot it held where it was, and may miss one made
    // since, as any concurrent walk may; no slot is ever in one array twice.
    private PoolSlot<T>?[] _slots = new PoolSlot<T>?[MinLength];
    private int _length;
    private int _live;
    private IndexStack _freed = new();

    // The array a compaction fills, or null; guarded by _lock. Invariant: it holds, in their order in _slots, the
    // slots of _slots below _copied, then the slots added below _copied since it began (which the copy will not
    // meet again); each at its place of parity _generation + 1. Entries at and above _nextLength are null, and so are
    // _nextFreed's indices below it. Each step copies at least 4 entries (_compactionStep) and begins with
    // _live < _slots.Length / 4, so _next (half as long) cannot fill before the copy ends.
    private PoolSlot<T>?[]? _next;
    private int _nextLength;
    private int _copied;
    private IndexStack _nextFreed = new();

    // Which of a slot's two places is in _slots (its parity); changes with _slots, under _lock, read without it.
    private int _generation;

    // Whether the array for a compaction is being allocated on the thread pool; guarded by _lock, so that one is.
    private bool _allocating;

    // How many times every slot was retired at once; changed under _lock, so that a slot registered
    // while that walk ran is either seen by it or told of it by Add.
    private int _retirements;

    // Every holder is halfway through making or discarding a slot: a few instructions, and at most one
    // compaction step of _compactionStep entries.
    private UninterruptibleSpinLock _lock;

    public SlotRegistry()
        : this(DefaultCompactionStep)
    {
    }

    /// <param name="compactionStep">Entries copied by each operation while a compaction is under way; at least 4.</param>
    internal SlotRegistry(int compactionStep)
    {
        Debug.Assert(compactionStep >= 4);
        _compactionStep = compactionStep;
    }

    /// <summary>Gets the slots now, for a walk that may miss a slot registered or moved during it; an entry is a slot or null.</summary>
    /// <remarks>The whole array: a length read apart from it could belong to a newer, compacted one.</remarks>
    public ReadOnlySpan<PoolSlot<T>?> Slots => Volatile.Read(ref _slots);

    /// <summary>Gets the array the hints point into.</summary>
    public PoolSlot<T>?[] Array => Volatile.Read(ref _slots);

    /// <summary>Gets how many slots are registered.</summary>
    public int Count => Volatile.Read(ref _live);

    /// <summary>Gets the length of the array; for tests of its shrinking.</summary>
    public int Capacity => Volatile.Read(ref _slots).Length;

    /// <summary>Gets whether a compaction is under way; for tests.</summary>
    public bool IsCompacting => Volatile.Read(ref _next) is not null;

    /// <summary>Gets how many times <see cref="RetireAll"/> has begun; pass it to <see cref="Add"/>.</summary>
    public int Retirements => Volatile.Read(ref _retirements);

    /// <summary>Gets where <see cref="Array"/> holds the slot, as a hint: read without the lock, it may be out of date.</summary>
    public int IndexOf(PoolSlot<T> slot) => Place(slot, Volatile.Read(ref _generation));

    /// <summary>Makes a new slot findable by walks and hints, retiring it if <see cref="RetireAll"/> began since <paramref name="retirements"/> was read.</summary>
    public void Add(PoolSlot<T> slot, int retirements)
    {
        _lock.Enter();
        try
        {
            if (_retirements != retirements)
            {
                slot.Retire();
            }

            int index = _freed.Count > 0 ? _freed.Pop() : _length++;
            PoolSlot<T>?[] slots = _slots;
            if (index >= slots.Length)
            {
                // Only a registry full to its length grows, and a compaction never lets it fill (see _next).
                Debug.Assert(_next is null);
                System.Array.Resize(ref slots, slots.Length * 2);
                Volatile.Write(ref _slots, slots);
            }

            Debug.Assert(slots[index] is null);
            Place(slot, _generation) = index;
            Volatile.Write(ref slots[index], slot);
            _live++;
            if (_next is { } next && index < _copied)
            {
                int nextIndex = _nextFreed.Count > 0 ? _nextFreed.Pop() : _nextLength++;
                Place(slot, _generation + 1) = nextIndex;
                next[nextIndex] = slot;
            }

            CompactStep();
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>Retires every slot registered now; a slot registered meanwhile is retired by <see cref="Add"/>.</summary>
    public void RetireAll()
    {
        _lock.Enter();
        _retirements++;
        _lock.Exit();

        foreach (PoolSlot<T>? slot in Slots)
        {
            slot?.Retire();
        }
    }

    /// <summary>Forgets a discarded slot; begins a compaction once three quarters of the array are free.</summary>
    public void Remove(PoolSlot<T> slot)
    {
        int shrinkFrom;
        _lock.Enter();
        try
        {
            int index = Place(slot, _generation);
            Debug.Assert(ReferenceEquals(_slots[index], slot));
            _slots[index] = null;
            _live--;
            Free(_freed, ref _length, index);
            if (_next is { } next && index < _copied)
            {
                int nextIndex = Place(slot, _generation + 1);
                Debug.Assert(ReferenceEquals(next[nextIndex], slot));
                next[nextIndex] = null;
                Free(_nextFreed, ref _nextLength, nextIndex);
            }

            CompactStep();
            shrinkFrom = _next is null && !_allocating && _slots.Length > MinLength && _live < _slots.Length / 4 ? _slots.Length : 0;
            _allocating |= shrinkFrom / 2 > InlineAllocationLimit;
        }
        finally
        {
            _lock.Exit();
        }

        if (shrinkFrom / 2 > InlineAllocationLimit)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static state => state.Registry.BeginCompaction(state.ShrinkFrom), (Registry: this, ShrinkFrom: shrinkFrom), preferLocal: false);
        }
        else if (shrinkFrom != 0)
        {
            BeginCompaction(shrinkFrom);
        }
    }

    /// <summary>The place of the given parity: its index in <see cref="_slots"/> or in <see cref="_next"/>.</summary>
    private static ref int Place(PoolSlot<T> slot, int generation) => ref (generation & 1) == 0 ? ref slot.Index : ref slot.NextIndex;

    /// <summary>Frees an index of an array whose used length is <paramref name="length"/>.</summary>
    private static void Free(IndexStack freed, ref int length, int index)
    {
        if (index == length - 1)
        {
            length--;
        }
        else
        {
            freed.Push(index);
        }
    }

    /// <summary>Begins filling an array half as long, allocated outside the lock, unless the array changed meanwhile.</summary>
    private void BeginCompaction(int shrinkFrom)
    {
        var next = new PoolSlot<T>?[Math.Max(MinLength, shrinkFrom / 2)];
        _lock.Enter();
        try
        {
            _allocating = false;
            if (_next is null && _slots.Length == shrinkFrom && _live < shrinkFrom / 4)
            {
                _nextLength = 0;
                _copied = 0;
                Debug.Assert(_nextFreed.Count == 0);
                Volatile.Write(ref _next, next);
                CompactStep();
            }
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>Copies the next entries of a compaction under way into <see cref="_next"/>, in order, and publishes it once all are.</summary>
    private void CompactStep()
    {
        Debug.Assert(_lock.IsHeld);
        if (_next is not { } next)
        {
            return;
        }

        PoolSlot<T>?[] slots = _slots;
        int end = Math.Min(_length, _copied + _compactionStep);
        int nextGeneration = _generation + 1;
        for (int index = _copied; index < end; index++)
        {
            if (slots[index] is { } slot)
            {
                Place(slot, nextGeneration) = _nextLength;
                next[_nextLength++] = slot;
            }
        }

        _copied = Math.Max(_copied, end);
        if (_copied < _length)
        {
            return;
        }

        // Each slot now has its place in next; readers of a place pair it with the array they read, as a hint.
        Volatile.Write(ref _generation, nextGeneration);
        Volatile.Write(ref _slots, next);
        _length = _nextLength;
        (_freed, _nextFreed) = (_nextFreed, _freed);
        _nextFreed.Clear();
        Volatile.Write(ref _next, null);
    }
}
