namespace PoolLib.Internal;

/// <summary>
/// The instances a meter observes, held weakly: one that is never unregistered can still be collected, and is then
/// forgotten.
/// </summary>
/// <remarks>
/// Compiled into PoolLib and, linked as source, into SocketServers, so that both meters share it without either
/// making it public. Thread safety: every member may be called from any thread; one lock guards the list.
/// </remarks>
/// <typeparam name="T">The observed type.</typeparam>
internal sealed class WeakRegistry<T>
    where T : class
{
    private readonly List<WeakReference<T>> _instances = [];
    private readonly Lock _lock = new();

    /// <summary>Observes <paramref name="instance"/> until <see cref="Remove"/> or until it is collected.</summary>
    /// <param name="instance">The instance.</param>
    public void Add(T instance)
    {
        using (_lock.EnterScope())
        {
            _instances.RemoveAll(static reference => !reference.TryGetTarget(out _));
            _instances.Add(new WeakReference<T>(instance));
        }
    }

    /// <summary>Stops observing <paramref name="instance"/>.</summary>
    /// <param name="instance">The instance.</param>
    public void Remove(T instance)
    {
        using (_lock.EnterScope())
        {
            _instances.RemoveAll(reference => !reference.TryGetTarget(out T? tracked) || ReferenceEquals(tracked, instance));
        }
    }

    /// <summary>The instances observed now and not yet collected, for one collection by a listener.</summary>
    /// <returns>A new list of them.</returns>
    public List<T> Live()
    {
        using (_lock.EnterScope())
        {
            var live = new List<T>(_instances.Count);
            foreach (WeakReference<T> reference in _instances)
            {
                if (reference.TryGetTarget(out T? instance))
                {
                    live.Add(instance);
                }
            }

            return live;
        }
    }
}
