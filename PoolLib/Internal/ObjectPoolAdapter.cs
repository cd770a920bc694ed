using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.ObjectPool;

namespace PoolLib.Internal;

/// <summary>
/// A <see cref="Pool{T}"/> seen as an <see cref="ObjectPool{T}"/>: <see cref="Get"/> takes,
/// <see cref="Return"/> releases, finding each object's slot in a table keyed by the object.
/// </summary>
/// <remarks>
/// Callers of <see cref="ObjectPool{T}"/> may drop an object instead of returning it, so by default
/// <see cref="Get"/> never waits: while the pool is exhausted it makes an object outside the pool,
/// which <see cref="Return"/> disposes and drops, as <see cref="DefaultObjectPool{T}"/> does.
/// </remarks>
internal sealed class ObjectPoolAdapter<T>(Pool<T> pool, bool waitWhileExhausted) : ObjectPool<T> where T : class
{
    // The slot of each object handed out, or null for one made outside the pool. Entries live as
    // long as their objects; a lookup takes no lock and allocates nothing.
    private readonly ConditionalWeakTable<T, PoolSlot<T>?> _slots = [];

    public override T Get()
    {
        PoolSlot<T>? slot;
        if (waitWhileExhausted)
        {
            slot = pool.TakeSlot();
        }
        else if (!pool.TryTakeSlot(out slot))
        {
            T unpooled = pool.CreateUnpooled();
            _slots.AddOrUpdate(unpooled, null);
            return unpooled;
        }

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
            ThrowNotTaken(nameof(obj));
        }

        if (slot is null)
        {
            // Made outside the pool: forgotten once returned, so a second Return throws, even one racing this.
            if (!_slots.Remove(obj))
            {
                ThrowNotTaken(nameof(obj));
            }

            (obj as IDisposable)?.Dispose();
            return;
        }

        pool.Release(slot);
    }

    [DoesNotReturn]
    private static void ThrowNotTaken(string paramName) =>
        throw new ArgumentException("The object was not taken from this pool.", paramName);
}
