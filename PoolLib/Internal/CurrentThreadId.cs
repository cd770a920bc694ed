namespace PoolLib.Internal;

/// <summary>
/// The calling thread's managed id, read from a thread-static field of a non-generic type: a few
/// instructions inline, where <see cref="Environment.CurrentManagedThreadId"/> is a call, and the
/// pool's shared generic code could not reach a thread static of its own without a lookup.
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
