using Microsoft.Extensions.ObjectPool;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>Lets code written against <see cref="ObjectPool{T}"/> use a <see cref="Pool{T}"/>.</summary>
public static class PoolObjectPoolExtensions
{
    /// <summary>Wraps <paramref name="pool"/> as an <see cref="ObjectPool{T}"/>.</summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="pool">The pool that makes, keeps and caps the objects.</param>
    /// <returns>
    /// An <see cref="ObjectPool{T}"/> whose <see cref="ObjectPool{T}.Get"/> takes an object (waiting,
    /// unlike <see cref="DefaultObjectPool{T}"/>, while all <see cref="Pool{T}.MaxCapacity"/> objects
    /// are rented) and whose <see cref="ObjectPool{T}.Return"/> releases it.
    /// </returns>
    /// <exception cref="ArgumentNullException"><paramref name="pool"/> is <see langword="null"/>.</exception>
    /// <remarks>
    /// Thread-safe as the pool is. <see cref="ObjectPool{T}.Return"/> throws <see cref="ArgumentException"/>
    /// for an object this adapter did not hand out, and <see cref="InvalidOperationException"/> for one
    /// returned twice, where <see cref="DefaultObjectPool{T}"/> would silently keep or drop it. Each call
    /// makes a new adapter; keep one per pool.
    /// </remarks>
    public static ObjectPool<T> AsObjectPool<T>(this Pool<T> pool)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(pool);
        return new ObjectPoolAdapter<T>(pool);
    }
}
