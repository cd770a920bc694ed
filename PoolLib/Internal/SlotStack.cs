using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// A lock-free LIFO stack of pool slots that allocates nothing per push or pop: each slot is its
/// own node, linked by index, where <see cref="System.Collections.Concurrent.ConcurrentStack{T}"/>
/// allocates a node on every push.
/// </summary>
/// <remarks>
/// <para>
/// Algorithm: a Treiber stack. The head is one 64-bit word holding the top slot's index (plus one;
/// zero is empty) and a version that every successful push and pop increments. A push links the
/// slot to the current top and swaps the head to it; a pop reads the top slot's link and swaps the
/// head to it. Slots are reused, so a plain Treiber stack over references would suffer ABA (the top
/// popped and pushed back between a pop's read and its swap, with a different link); comparing
/// the version with the index rules that out, short of 2^32 operations inside one pop's window.
/// </para>
/// <para>
/// Slots are registered when their pool creates them and unregistered when it discards them; the
/// registry maps indices to slots and recycles the indices of discarded slots. Registration is
/// under a lock: it happens only when an object is created or discarded, never per take or release,
/// and the lock is an <see cref="UninterruptibleLock"/>, so an interrupt cannot leave a slot half registered.
/// </para>
/// <para>
/// Count: each slot records its depth (how many slots it is on top of, plus one) when it is pushed,
/// so the size of the stack is the depth of its top slot and no separate counter has to be updated
/// with an interlocked operation on every push and pop.
/// </para>
/// <para>
/// Batches: <see cref="PushBatch"/> links a chain of slots and swaps the head to its top in one
/// CAS; <see cref="PopBatch"/> walks a few links down from the top and swaps the head past them in
/// one CAS, which the version makes safe (see the invariant there).
/// </para>
/// <para>
/// Guarantees: lock-free push and pop; a slot pushed once is popped at most once. Not guaranteed:
/// fairness between contending threads.
/// </para>
/// </remarks>
internal sealed class SlotStack<T> where T : class
{
    private const int InitialRegistrySize = 4;

    // (version << 32) | (top index + 1). Changed only by a CAS that also bumps the version.
    private long _head;

    // Guarded by _registryLock for writes. Every registered slot sits at its StackIndex; a reader
    // without the lock reads the array reference with Volatile.Read, and because a slot is written
    // here before its first push, the head it reads through publishes the entry.
    private PoolSlot<T>?[] _registry = new PoolSlot<T>?[InitialRegistrySize];
    private readonly Stack<int> _freeIndices = new();
    private readonly UninterruptibleLock _registryLock = new();
    private int _registered;

    /// <summary>Gets the lock that guards the registry; for tests that contend it.</summary>
    public UninterruptibleLock RegistryLock => _registryLock;

    /// <summary>Gives a new slot an index, so it can be linked; call once, before its first push.</summary>
    public void Register(PoolSlot<T> slot)
    {
        using (_registryLock.EnterScope())
        {
            int index = _freeIndices.Count > 0 ? _freeIndices.Pop() : _registered++;
            PoolSlot<T>?[] registry = _registry;
            if (index >= registry.Length)
            {
                Array.Resize(ref registry, registry.Length * 2);
            }

            Debug.Assert(registry[index] is null);
            registry[index] = slot;
            slot.StackIndex = index;
            Volatile.Write(ref _registry, registry);
        }
    }

    /// <summary>
    /// Gets every registered slot, for a scan that may miss a slot registered or discarded during it:
    /// an entry is a live slot or <see langword="null"/>, and the array is never written past its registered part.
    /// </summary>
    public PoolSlot<T>?[] Registered => Volatile.Read(ref _registry);

    /// <summary>Frees a discarded slot's index for reuse; the slot must not be in the stack.</summary>
    public void Unregister(PoolSlot<T> slot)
    {
        using (_registryLock.EnterScope())
        {
            Debug.Assert(ReferenceEquals(_registry[slot.StackIndex], slot));
            _registry[slot.StackIndex] = null;
            _freeIndices.Push(slot.StackIndex);
        }
    }

    /// <summary>
    /// Gets how many slots are in the stack: exact when no push or pop is in flight, otherwise the
    /// size at some instant during the call.
    /// </summary>
    public int Count
    {
        get
        {
            var backoff = new RetryBackoff();
            while (true)
            {
                long head = Volatile.Read(ref _head);
                int top = (int)head;
                if (top == 0)
                {
                    return 0;
                }

                // The depth is that of the head read above only if the head is still the same
                // (same version) after reading it; otherwise the entry may be stale or recycled.
                if (Volatile.Read(ref _registry)[top - 1] is { } slot)
                {
                    int depth = Volatile.Read(ref slot.DepthInStack);
                    if (Volatile.Read(ref _head) == head)
                    {
                        return depth;
                    }
                }

                backoff.Wait();
            }
        }
    }

    /// <summary>Pushes a registered slot that the caller owns.</summary>
    public void Push(PoolSlot<T> slot) => PushBatch([], slot);

    /// <summary>Pushes registered slots the caller owns with one swap: <paramref name="slots"/> in order, then <paramref name="last"/> on top.</summary>
    /// <param name="slots">Slots of this stack's pool, as objects (a thread's cache holds them so); may be empty.</param>
    /// <param name="last">The slot that ends on top.</param>
    public void PushBatch(ReadOnlySpan<object?> slots, PoolSlot<T> last)
    {
        long newTop = last.StackIndex + 1L;
        var backoff = new RetryBackoff();
        while (true)
        {
            long head = Volatile.Read(ref _head);
            int top = (int)head;

            // Invariant: a slot in the stack has DepthInStack = 1 + the number of slots below it.
            // The depth read from the current top is right if the CAS below succeeds, because the
            // CAS compares the version too: the top cannot have been popped and pushed back (with
            // a new depth) in between. A stale or recycled entry only costs a failed CAS. Each slot
            // pushed is linked to the one before it and one deeper.
            int depth = 0;
            if (top != 0)
            {
                PoolSlot<T>? below = Volatile.Read(ref _registry)[top - 1];
                if (below is null)
                {
                    backoff.Wait();
                    continue;
                }

                depth = Volatile.Read(ref below.DepthInStack);
            }

            int link = top;
            foreach (object? item in slots)
            {
                PoolSlot<T> slot = Unsafe.As<PoolSlot<T>>(item)!;
                slot.NextInStack = link;
                slot.DepthInStack = ++depth;
                link = slot.StackIndex + 1;
            }

            last.NextInStack = link;
            last.DepthInStack = depth + 1;
            if (Interlocked.CompareExchange(ref _head, NextVersion(head) | newTop, head) == head)
            {
                return;
            }

            backoff.Wait();
        }
    }

    /// <summary>Pops the most recently pushed slot, if any.</summary>
    public bool TryPop([NotNullWhen(true)] out PoolSlot<T>? slot) => (slot = PopBatch(1, out _)) is not null;

    /// <summary>
    /// Pops the newest slots at once, up to <paramref name="maxCount"/> but no more than half of
    /// the stack (and at least one), so that a batch leaves other takers at least as many as it takes.
    /// </summary>
    /// <param name="maxCount">The most slots to pop; at least 1.</param>
    /// <param name="count">How many slots were popped; 0 if the stack was empty.</param>
    /// <returns>
    /// The newest slot popped, or <see langword="null"/> if the stack was empty. The slots popped stay
    /// linked as they were in the stack (each one's next is <see cref="NextPopped"/>), and the caller owns them all.
    /// </returns>
    public PoolSlot<T>? PopBatch(int maxCount, out int count)
    {
        Debug.Assert(maxCount >= 1);

        var backoff = new RetryBackoff();
        while (true)
        {
            long head = Volatile.Read(ref _head);
            int top = (int)head;
            if (top == 0)
            {
                count = 0;
                return null;
            }

            // Invariant: if the CAS below succeeds, the version shows that no push or pop succeeded
            // since the head was read, so the stack did not change while its links were walked: every
            // slot walked was in it throughout, owned by nobody, so its link and depth were not
            // being written, and "next" is the link below the last slot walked. A walk that met a
            // stale or recycled entry (the stack did change) stops early; its CAS then fails on the
            // version and we read again.
            PoolSlot<T>?[] registry = Volatile.Read(ref _registry);
            PoolSlot<T>? candidate = registry[top - 1];
            if (candidate is not null)
            {
                int wanted = Math.Clamp(Volatile.Read(ref candidate.DepthInStack) / 2, 1, maxCount);
                count = 1;
                long next = (uint)Volatile.Read(ref candidate.NextInStack);
                while (count < wanted && (ulong)(next - 1) < (ulong)registry.Length && registry[next - 1] is { } below)
                {
                    next = (uint)Volatile.Read(ref below.NextInStack);
                    count++;
                }

                if (Interlocked.CompareExchange(ref _head, NextVersion(head) | next, head) == head)
                {
                    return candidate;
                }
            }

            backoff.Wait();
        }
    }

    /// <summary>Gets the slot that was below <paramref name="slot"/> when a batch containing both was popped.</summary>
    /// <remarks>Read it before the slot is stored again: storing it gives it a new link.</remarks>
    public PoolSlot<T> NextPopped(PoolSlot<T> slot)
    {
        Debug.Assert(slot.NextInStack != 0, "Not the last slot of its batch.");
        return Volatile.Read(ref _registry)[slot.NextInStack - 1]!;
    }

    private static long NextVersion(long head) => (long)(((ulong)head & 0xFFFF_FFFF_0000_0000UL) + 0x1_0000_0000UL);
}
