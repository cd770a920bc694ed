namespace PoolLib.Internal;

/// <summary>
/// A pool's <see cref="ThreadHints{T}"/>, one per thread that has taken an object, found by
/// managed thread id. The runtime reuses the id of a thread that has ended, so the table grows with
/// the threads alive at once, and a new thread inherits hints that are only ever a place to look.
/// </summary>
internal sealed class ThreadHintTable<T>(int leakSamplingInterval) where T : class
{
    // Indexed by managed thread id. An entry, once set, is never replaced, and a larger table copies
    // every entry; written under _lock, read without it.
    private ThreadHints<T>?[] _byThreadId = new ThreadHints<T>?[16];

    // The same hints, side by side, for the walks that read every thread's: the ids in use may be few and large.
    // Replaced, one longer, under _lock; read without it.
    private ThreadHints<T>[] _all = [];

    // Uninterruptible: a take may make its thread's hints halfway through taking an object.
    private readonly UninterruptibleLock _lock = new();

    /// <summary>Gets the calling thread's hints, made now if need be.</summary>
    public ThreadHints<T> Current
    {
        get
        {
            ThreadHints<T>?[] table = _byThreadId;
            int threadId = CurrentThreadId.Value;
            return (uint)threadId < (uint)table.Length && table[threadId] is { } hints ? hints : Create(threadId);
        }
    }

    /// <summary>Gets the calling thread's hints if it has any; the fast path of a take.</summary>
    public ThreadHints<T>? CurrentOrNull
    {
        get
        {
            ThreadHints<T>?[] table = _byThreadId;
            int threadId = CurrentThreadId.Value;
            return (uint)threadId < (uint)table.Length ? table[threadId] : null;
        }
    }

    /// <summary>Sums every thread's <see cref="ThreadHints{T}.IdleBalance"/>: the idle slots, exact when no take or release is in flight.</summary>
    /// <remarks>A read per thread that has used the pool, not per slot; a thread that joins meanwhile counted nothing yet.</remarks>
    public long SumIdleBalances()
    {
        long idle = 0;
        foreach (ThreadHints<T> hints in Volatile.Read(ref _all))
        {
            idle += hints.IdleBalance;
        }

        return idle;
    }

    private ThreadHints<T> Create(int threadId)
    {
        using (_lock.EnterScope())
        {
            ThreadHints<T>?[] table = _byThreadId;
            if (threadId >= table.Length)
            {
                Array.Resize(ref table, Math.Max(threadId + 1, table.Length * 2));
            }

            if (table[threadId] is not { } hints)
            {
                hints = table[threadId] = new ThreadHints<T>(leakSamplingInterval);
                Volatile.Write(ref _all, [.. _all, hints]);
            }

            Volatile.Write(ref _byThreadId, table);
            return hints;
        }
    }
}
