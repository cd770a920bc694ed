using System.Diagnostics;

namespace PoolLib.Internal;

/// <summary>
/// Every slot a pool has made and not yet discarded, each at its <see cref="PoolSlot{T}.Index"/>: what
/// Trim, Clear, Dispose and maintenance walk, and what a thread's hints (indices) point into. The
/// array shrinks with the slots, so walks and memory follow the objects that exist now.
/// </summary>
internal sealed class SlotRegistry<T> where T : class
{
    private const int MinLength = 16;

    // Guarded by _lock for writes; read without it. Entries at and above _length are null, and so are
    // the freed indices below it. A compaction writes a new array: readers of the old one see every
    // slot it held where it was, and may miss one made since, as any concurrent walk may.
    private PoolSlot<T>?[] _slots = new PoolSlot<T>?[MinLength];
    private int _length;
    private int _live;
    private readonly Stack<int> _freed = new();

    // How many times every slot was retired at once; changed under _lock, so that a slot registered
    // while that walk ran is either seen by it or told of it by Add.
    private int _retirements;

    // Every holder is halfway through making or discarding a slot. A few instructions but in Compact,
    // which walks the array, and which a halving array makes rare.
    private UninterruptibleSpinLock _lock;

    /// <summary>Gets the slots now, for a walk that may miss a slot registered or moved during it; an entry is a slot or null.</summary>
    /// <remarks>The whole array: a length read apart from it could belong to a newer, compacted one.</remarks>
    public ReadOnlySpan<PoolSlot<T>?> Slots => Volatile.Read(ref _slots);

    /// <summary>Gets the array the hints point into.</summary>
    public PoolSlot<T>?[] Array => Volatile.Read(ref _slots);

    /// <summary>Gets how many slots are registered.</summary>
    public int Count => Volatile.Read(ref _live);

    /// <summary>Gets the length of the array; for tests of its shrinking.</summary>
    public int Capacity => Volatile.Read(ref _slots).Length;

    /// <summary>Gets how many times <see cref="RetireAll"/> has begun; pass it to <see cref="Add"/>.</summary>
    public int Retirements => Volatile.Read(ref _retirements);

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
                System.Array.Resize(ref slots, slots.Length * 2);
                Volatile.Write(ref _slots, slots);
            }

            Debug.Assert(slots[index] is null);
            slot.Index = index;
            Volatile.Write(ref slots[index], slot);
            _live++;
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

    /// <summary>Forgets a discarded slot; compacts the array once three quarters of it are free.</summary>
    public void Remove(PoolSlot<T> slot)
    {
        _lock.Enter();
        try
        {
            Debug.Assert(ReferenceEquals(_slots[slot.Index], slot));
            _slots[slot.Index] = null;
            _live--;
            if (slot.Index == _length - 1)
            {
                _length--;
            }
            else
            {
                _freed.Push(slot.Index);
            }

            if (_slots.Length > MinLength && _live < _slots.Length / 4)
            {
                Compact();
            }
        }
        finally
        {
            _lock.Exit();
        }
    }

    /// <summary>Moves every slot to the front of a smaller array; a hint to a moved slot then finds another or none.</summary>
    private void Compact()
    {
        Debug.Assert(_lock.IsHeld);
        var compacted = new PoolSlot<T>?[Math.Max(MinLength, _slots.Length / 2)];
        int next = 0;
        foreach (PoolSlot<T>? slot in _slots.AsSpan(0, _length))
        {
            if (slot is not null)
            {
                slot.Index = next;
                compacted[next++] = slot;
            }
        }

        _freed.Clear();
        _length = next;
        Volatile.Write(ref _slots, compacted);
    }
}
