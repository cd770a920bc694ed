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
    // What this adapter handed out last of each object: its slot and rental, or no slot for one made outside the
    // pool. Entries live as long as their objects; a lookup takes no lock, and only an object's first Get allocates.
    private readonly ConditionalWeakTable<T, HandedOut> _handedOut = [];

    public override T Get()
    {
        PoolSlot<T>? slot;
        if (waitWhileExhausted)
        {
            slot = pool.TakeSlot();
        }
        else if (!pool.TryTakeSlot(out slot))
        {
            // Made outside the pool, neither counted nor kept: a caller of ObjectPool<T>.Get must not wait.
            if (pool.IsDisposed)
            {
                pool.ThrowDisposed();
            }

            T unpooled = pool.Lifecycle.Construct();
            _handedOut.AddOrUpdate(unpooled, new HandedOut(null));
            return unpooled;
        }

        if (!_handedOut.TryGetValue(slot.Object, out HandedOut? handedOut))
        {
            handedOut = new HandedOut(slot);
            _handedOut.AddOrUpdate(slot.Object, handedOut);
        }

        handedOut.Rental = slot.Rental;
        return slot.Object;
    }

    public override void Return(T obj)
    {
        ArgumentNullException.ThrowIfNull(obj);
        if (!_handedOut.TryGetValue(obj, out HandedOut? handedOut))
        {
            ThrowNotTaken(nameof(obj));
        }

        if (handedOut.Slot is not { } slot)
        {
            // Made outside the pool: forgotten once returned, so a second Return throws, even one racing this.
            if (!_handedOut.Remove(obj))
            {
                ThrowNotTaken(nameof(obj));
            }

            (obj as IDisposable)?.Dispose();
            return;
        }

        // With the rental this adapter handed out: a Return after someone else took the object from the pool throws.
        pool.Release(slot, handedOut.Rental);
    }

    [DoesNotReturn]
    private static void ThrowNotTaken(string paramName) =>
        throw new ArgumentException("The object was not taken from this pool.", paramName);

    private sealed class HandedOut(PoolSlot<T>? slot)
    {
        public PoolSlot<T>? Slot { get; } = slot;

        // Written by each Get of the object, read by the Return that follows it.
        public int Rental { get; set; }
    }
}
