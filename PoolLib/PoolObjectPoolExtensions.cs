using Microsoft.Extensions.ObjectPool;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>Lets code written against <see cref="ObjectPool{T}"/> use a <see cref="Pool{T}"/>.</summary>
public static class PoolObjectPoolExtensions
{
    /// <summary>Wraps <paramref name="pool"/> as an <see cref="ObjectPool{T}"/> that never waits, as <see cref="DefaultObjectPool{T}"/> never does.</summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="pool">The pool that makes, keeps and caps the objects.</param>
    /// <returns>
    /// An <see cref="ObjectPool{T}"/> whose <see cref="ObjectPool{T}.Get"/> takes an object from the
    /// pool or, while all <see cref="Pool{T}.MaxCapacity"/> objects are rented, makes one outside it,
    /// and whose <see cref="ObjectPool{T}.Return"/> releases a pooled object and disposes (if it is
    /// <see cref="IDisposable"/>) and drops one made outside the pool.
    /// </returns>
    /// <exception cref="ArgumentNullException"><paramref name="pool"/> is <see langword="null"/>.</exception>
    /// <remarks>
    /// <para>
    /// Code written against <see cref="ObjectPool{T}"/> may drop an object instead of returning it;
    /// such an object keeps its place under the pool's cap, and while the cap is reached this adapter
    /// goes on making objects outside the pool rather than blocking. Use
    /// <see cref="AsObjectPool{T}(Pool{T}, bool)"/> to wait instead.
    /// </para>
    /// <para>
    /// Thread-safe as the pool is. <see cref="ObjectPool{T}.Return"/> throws <see cref="ArgumentException"/>
    /// for an object this adapter did not hand out, or one made outside the pool and already returned,
    /// and <see cref="InvalidOperationException"/> for a pooled object returned twice before this adapter
    /// hands it out again, even if the pool itself or another adapter has since rented it to someone
    /// else, where <see cref="DefaultObjectPool{T}"/> would silently keep or drop it. Each call
    /// makes a new adapter; keep one per pool.
    /// </para>
    /// </remarks>
    public static ObjectPool<T> AsObjectPool<T>(this Pool<T> pool)
        where T : class => AsObjectPool(pool, waitWhileExhausted: false);

    /// <summary>Wraps <paramref name="pool"/> as an <see cref="ObjectPool{T}"/>, saying what <see cref="ObjectPool{T}.Get"/> does while the pool is exhausted.</summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="pool">The pool that makes, keeps and caps the objects.</param>
    /// <param name="waitWhileExhausted">
    /// <see langword="true"/>: <see cref="ObjectPool{T}.Get"/> waits, as <see cref="Pool{T}.TakeSlot"/>
    /// does, until an object is returned, so the cap holds for every object handed out, and every
    /// caller must return what it gets. <see langword="false"/>: as <see cref="AsObjectPool{T}(Pool{T})"/>.
    /// </param>
    /// <returns>The adapter; see <see cref="AsObjectPool{T}(Pool{T})"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="pool"/> is <see langword="null"/>.</exception>
    public static ObjectPool<T> AsObjectPool<T>(this Pool<T> pool, bool waitWhileExhausted)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(pool);
        return new ObjectPoolAdapter<T>(pool, waitWhileExhausted);
    }
}
