using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace PoolLib;

/// <summary>
/// Where a pool's idle slots wait: one cell per core in front of a lock-free stack (<see cref="SlotStack{T}"/>).
/// </summary>
/// <remarks>
/// <para>
/// Algorithm: a push first tries the cell of the core the caller runs on (a compare-and-swap from
/// empty), and only if that cell is taken pushes onto the shared stack. A take first empties the
/// caller's cell (an exchange with empty, <see cref="TryPopLocal"/>); failing that it pops the stack,
/// then sweeps every core's cell (<see cref="TryPop"/>).
/// A thread that takes and returns on the same core therefore touches only its own cache line and
/// allocates nothing; so does the stack, whose nodes are the slots themselves.
/// </para>
/// <para>
/// Guarantees: lock-free; every slot pushed is popped at most once (each cell and the stack hand a
/// reference to exactly one winner); a pop that returns <see langword="false"/> saw every cell and
/// the stack empty at the moment it looked at each (a slot pushed concurrently may be missed, which
/// callers that must not miss one cover with a second look after a fence; see
/// <see cref="Pool{T}"/>). Not guaranteed: LIFO order across cells, or a consistent
/// <see cref="Count"/> while pushes and pops are in flight.
/// </para>
/// </remarks>
internal sealed class SlotStorage<T> where T : class
{
    // Each cell holds null or one PoolSlot<T> that is in the pool (state InPool). A slot is in at
    // most one cell or in the stack, never in two places: it is written only by the thread that
    // owns it (its returner) and removed only by Interlocked.Exchange, which gives it to one popper.
    private readonly PaddedReference[] _cells;
    private readonly int _cellMask;

    private readonly SlotStack<T> _stack = new();

    public SlotStorage()
    {
        int cellCount = (int)BitOperations.RoundUpToPowerOf2((uint)Environment.ProcessorCount);
        _cells = new PaddedReference[cellCount];
        _cellMask = cellCount - 1;
    }

    /// <summary>
    /// Gets how many slots are stored. Exact when no push or pop is in flight; otherwise a snapshot
    /// that may count a slot moving between cells twice, or miss it.
    /// </summary>
    public int Count
    {
        get
        {
            int count = _stack.Count;
            for (int i = 0; i < _cells.Length; i++)
            {
                if (Volatile.Read(ref _cells[i].Value) is not null)
                {
                    count++;
                }
            }

            return count;
        }
    }

    /// <summary>Makes a new slot storable; called once when its object is created.</summary>
    public void Register(PoolSlot<T> slot) => _stack.Register(slot);

    /// <summary>Forgets a discarded slot, which is in no cell and not in the stack.</summary>
    public void Unregister(PoolSlot<T> slot) => _stack.Unregister(slot);

    /// <summary>Stores a slot that the caller owns and has marked in-pool.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Push(PoolSlot<T> slot)
    {
        Debug.Assert(slot.IsInPool);

        ref object? cell = ref LocalCell();
        if (Volatile.Read(ref cell) is null && Interlocked.CompareExchange(ref cell, slot, null) is null)
        {
            return;
        }

        PushToStack(slot);
    }

    /// <summary>Takes the slot in the calling core's cell, if there is one. The cheapest way out.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryPopLocal([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        ref object? cell = ref LocalCell();
        if (Volatile.Read(ref cell) is not null && Interlocked.Exchange(ref cell, null) is { } taken)
        {
            slot = Unsafe.As<PoolSlot<T>>(taken);
            return true;
        }

        slot = null;
        return false;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private ref object? LocalCell() => ref _cells[Thread.GetCurrentProcessorId() & _cellMask].Value;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void PushToStack(PoolSlot<T> slot) => _stack.Push(slot);

    /// <summary>
    /// Takes any stored slot: the stack, else any core's cell, the caller's included. Every caller has
    /// just tried <see cref="TryPopLocal"/> or does not care which slot it gets, so the local cell is
    /// not probed first (that would read the core number a second time).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public bool TryPop([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        if (_stack.TryPop(out slot))
        {
            return true;
        }

        // The owning core's thread may have been moved, or the slot returned on another core: sweep every cell.
        for (int i = 0; i < _cells.Length; i++)
        {
            ref object? cell = ref _cells[i].Value;
            if (Volatile.Read(ref cell) is not null && Interlocked.Exchange(ref cell, null) is { } taken)
            {
                slot = Unsafe.As<PoolSlot<T>>(taken);
                return true;
            }
        }

        slot = null;
        return false;
    }
}
