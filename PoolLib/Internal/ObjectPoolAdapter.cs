using System.Runtime.CompilerServices;
using Microsoft.Extensions.ObjectPool;

namespace PoolLib.Internal;

/// <summary>
/// A <see cref="Pool{T}"/> seen as an <see cref="ObjectPool{T}"/>: <see cref="Get"/> takes (and waits
/// while the pool is exhausted), <see cref="Return"/> releases. Each object's slot is found again
/// through a table keyed by the object, filled the first time the object is handed out.
/// </summary>
internal sealed class ObjectPoolAdapter<T>(Pool<T> pool) : ObjectPool<T> where T : class
{
    // Entries live as long as their objects; a lookup takes no lock and allocates nothing.
    private readonly ConditionalWeakTable<T, PoolSlot<T>> _slots = [];

    public override T Get()
    {
        PoolSlot<T> slot = pool.TakeSlot();
        if (!_slots.TryGetValue(slot.Object, out _))
        {
            _slots.AddOrUpdate(slot.Object, slot);
        }

        return slot.Object;
    }

    public override void Return(T obj)
    {
        ArgumentNullException.ThrowIfNull(obj);
        if (!_slots.TryGetValue(obj, out PoolSlot<T>? slot))
        {
            throw new ArgumentException("The object was not taken from this pool.", nameof(obj));
        }

        pool.Release(slot);
    }
}
