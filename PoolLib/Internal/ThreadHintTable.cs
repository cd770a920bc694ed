namespace PoolLib.Internal;

/// <summary>
/// A pool's <see cref="ThreadHints"/>, one per thread that has taken or returned an object, found by
/// managed thread id. The runtime reuses the id of a thread that has ended, so the table grows with
/// the threads alive at once, and a new thread inherits hints that are only ever a place to look.
/// </summary>
internal sealed class ThreadHintTable
{
    // Indexed by managed thread id. An entry, once set, is never replaced, and a larger table copies
    // every entry; written under _lock, read without it.
    private ThreadHints?[] _byThreadId = new ThreadHints?[16];
    // Uninterruptible: a release may make its thread's hints, and must not stop halfway.
    private readonly UninterruptibleLock _lock = new();

    /// <summary>Gets the calling thread's hints, made now if need be.</summary>
    public ThreadHints Current
    {
        get
        {
            ThreadHints?[] table = _byThreadId;
            int threadId = CurrentThreadId.Value;
            return (uint)threadId < (uint)table.Length && table[threadId] is { } hints ? hints : Create(threadId);
        }
    }

    /// <summary>Gets the calling thread's hints if it has any; the fast path of a take.</summary>
    public ThreadHints? CurrentOrNull
    {
        get
        {
            ThreadHints?[] table = _byThreadId;
            int threadId = CurrentThreadId.Value;
            return (uint)threadId < (uint)table.Length ? table[threadId] : null;
        }
    }

    /// <summary>Gets the objects taken and not yet returned, over every thread: O(threads), a snapshot.</summary>
    public long Outstanding
    {
        get
        {
            long outstanding = 0;
            foreach (ThreadHints? hints in Volatile.Read(ref _byThreadId))
            {
                outstanding += hints?.Outstanding ?? 0;
            }

            return outstanding;
        }
    }

    private ThreadHints Create(int threadId)
    {
        using (_lock.EnterScope())
        {
            ThreadHints?[] table = _byThreadId;
            if (threadId >= table.Length)
            {
                Array.Resize(ref table, Math.Max(threadId + 1, table.Length * 2));
            }

            ThreadHints hints = table[threadId] ??= new ThreadHints();
            Volatile.Write(ref _byThreadId, table);
            return hints;
        }
    }
}
