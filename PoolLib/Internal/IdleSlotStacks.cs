using System.Diagnostics.CodeAnalysis;
using System.Numerics;

namespace PoolLib.Internal;

/// <summary>
/// Where every idle slot can be found by any thread: one <see cref="IdleSlotStack{T}"/> per core (as
/// runtime's SharedArrayPool partitions its arrays), a release pushing onto its core's stack and a
/// take trying its core's first. Only the slow paths come here: a thread that takes back what it
/// took finds it through its own hints, and the slot's entry stays where it was.
/// </summary>
internal sealed class IdleSlotStacks<T> where T : class
{
    private readonly IdleSlotStack<T>[] _stacks;
    private readonly int _mask;

    public IdleSlotStacks()
    {
        int count = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Clamp(Environment.ProcessorCount, 1, 64));
        _stacks = new IdleSlotStack<T>[count];
        for (int i = 0; i < count; i++)
        {
            _stacks[i] = new IdleSlotStack<T>();
        }

        _mask = count - 1;
    }

    /// <summary>Gets how many entries the stacks hold, stale ones included: a snapshot, O(cores).</summary>
    public int EntryCount
    {
        get
        {
            int count = 0;
            foreach (IdleSlotStack<T> stack in _stacks)
            {
                count += stack.Count;
            }

            return count;
        }
    }

    /// <summary>Gives a slot just made idle an entry, on the calling core's stack, unless it has one.</summary>
    public void Push(PoolSlot<T> slot) => _stacks[Thread.GetCurrentProcessorId() & _mask].Push(slot);

    /// <summary>Claims an idle slot, retired or not, the calling core's stack first.</summary>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="lookEverywhere">
    /// Whether to lock every stack, even one that looks empty: a waiter must, to meet a push that is
    /// under way; a taker that does not wait may pass a slot published that very moment.
    /// </param>
    /// <param name="sawReturning">Set when an entry of a slot still being returned was passed over.</param>
    /// <param name="budget">
    /// Entries the take may look at, over every stack (<see cref="int.MaxValue"/>: all); below 0 on return when it
    /// ran out: the stacks may hold an idle slot beyond it.
    /// </param>
    public bool TryTake([NotNullWhen(true)] out PoolSlot<T>? slot, bool lookEverywhere, ref bool sawReturning, ref int budget)
    {
        if (!lookEverywhere && EntryCount == 0)
        {
            slot = null;
            return false;
        }

        int first = Thread.GetCurrentProcessorId();
        for (int i = 0; i < _stacks.Length; i++)
        {
            IdleSlotStack<T> stack = _stacks[(first + i) & _mask];
            if ((lookEverywhere || stack.Count != 0) && stack.TryTake(out slot, ref sawReturning, ref budget))
            {
                return true;
            }

            if (budget < 0)
            {
                break;
            }
        }

        slot = null;
        return false;
    }

    /// <summary>Removes the entry of a slot being discarded, if it has one.</summary>
    public static void Remove(PoolSlot<T> slot) => slot.Stack?.Remove(slot);
}
