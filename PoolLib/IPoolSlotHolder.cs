namespace PoolLib;

/// <summary>
/// An object that carries the <see cref="PoolSlot{T}"/> it was rented through, so that
/// <see cref="PoolEx{T}"/> can take it back from the object alone.
/// </summary>
/// <typeparam name="T">The pooled type itself.</typeparam>
/// <remarks>
/// <see cref="PoolEx{T}"/> sets <see cref="PoolSlot"/> once, when it creates the object, before any
/// taker sees it, and reads it on every release: a plain auto-property, never changed by the object.
/// </remarks>
public interface IPoolSlotHolder<T> where T : class
{
    /// <summary>Gets or sets the slot that owns this object; <see langword="null"/> until a pool creates it.</summary>
    PoolSlot<T>? PoolSlot { get; set; }
}
