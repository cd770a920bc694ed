namespace PoolLib.Internal;

/// <summary>
/// The calling thread's managed id, kept in a thread-static field of a non-generic type: reading it
/// costs less than <see cref="Environment.CurrentManagedThreadId"/>, and the pool's generic code,
/// shared by every reference type, reaches it without a lookup of its type's own statics.
/// </summary>
internal static class CurrentThreadId
{
    // 0 until the thread first asks; managed ids start at 1 and are reused only after their thread is gone.
    [ThreadStatic]
    private static int t_value;

    public static int Value
    {
        get
        {
            int id = t_value;
            return id != 0 ? id : t_value = Environment.CurrentManagedThreadId;
        }
    }
}
