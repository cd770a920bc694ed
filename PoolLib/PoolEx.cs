using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace PoolLib;

/// <summary>
/// A <see cref="Pool{T}"/> of objects that carry their own slot (<see cref="IPoolSlotHolder{T}"/>),
/// so callers rent and return the object itself and never handle a <see cref="PoolSlot{T}"/>.
/// </summary>
/// <typeparam name="T">The pooled type; it stores its slot in <see cref="IPoolSlotHolder{T}.PoolSlot"/>.</typeparam>
/// <remarks>Thread safety and semantics are those of <see cref="Pool{T}"/>.</remarks>
public abstract class PoolEx<T> : Pool<T> where T : class, IPoolSlotHolder<T>
{
    /// <summary>Initialises a pool that never holds more than <paramref name="maxCapacity"/> objects at once.</summary>
    /// <param name="maxCapacity">The cap on objects alive at once; at least 1.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxCapacity"/> is less than 1.</exception>
    protected PoolEx(int maxCapacity)
        : base(maxCapacity)
    {
    }

    /// <summary>Initialises a pool as <paramref name="options"/> say; see <see cref="Pool{T}(PoolOptions)"/>.</summary>
    /// <param name="options">The cap, the name and the optional features; read once, here.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the parameter name names it.</exception>
    /// <exception cref="ArgumentException"><see cref="PoolOptions.Name"/> is empty or white space.</exception>
    protected PoolEx(PoolOptions options)
        : base(options)
    {
    }

    /// <summary>Takes an object, waiting as long as it takes while the pool is exhausted.</summary>
    /// <returns>The rented object; give it back with <see cref="Release(T)"/>.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    public T TakeObject() => TakeSlot().Object;

    /// <summary>Takes an object, waiting asynchronously while the pool is exhausted.</summary>
    /// <param name="cancellationToken">Cancels the wait; the pool is then exactly as if this had never been called.</param>
    /// <returns>The rented object. Completes synchronously, without allocating, when an object is idle.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled first.</exception>
    public ValueTask<T> TakeObjectAsync(CancellationToken cancellationToken = default)
    {
        ValueTask<PoolSlot<T>> take = TakeSlotAsync(cancellationToken);
        return take.IsCompletedSuccessfully
            ? new ValueTask<T>(take.Result.Object)
            : AwaitObject(take);
    }

    /// <summary>Returns a rented object to the pool, through the slot it carries.</summary>
    /// <param name="object">An object taken from this pool and not yet returned.</param>
    /// <exception cref="ArgumentNullException"><paramref name="object"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="object"/> carries no slot of this pool.</exception>
    /// <exception cref="InvalidOperationException"><paramref name="object"/> is already back in the pool.</exception>
    /// <remarks>Otherwise exactly <see cref="Pool{T}.Release(PoolSlot{T})"/> on the object's slot.</remarks>
    public void Release(T @object)
    {
        ArgumentNullException.ThrowIfNull(@object, nameof(@object));
        PoolSlot<T>? slot = @object.PoolSlot;
        if (slot is null || !ReferenceEquals(slot.Owner, this) || !ReferenceEquals(slot.Object, @object))
        {
            ThrowNotFromThisPool(nameof(@object));
        }

        Release(slot);
    }

    /// <summary>Stores the slot in the object's <see cref="IPoolSlotHolder{T}.PoolSlot"/>.</summary>
    /// <param name="object">The new object.</param>
    /// <param name="slot">Its slot.</param>
    protected sealed override void HoldSlotInObject(T @object, PoolSlot<T> slot) => @object.PoolSlot = slot;

    private static async ValueTask<T> AwaitObject(ValueTask<PoolSlot<T>> take) =>
        (await take.ConfigureAwait(false)).Object;

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowNotFromThisPool(string paramName) =>
        throw new ArgumentException("The object was not taken from this pool: it carries no slot of it.", paramName);
}
