namespace PoolLib;

/// <summary>
/// An object that carries the <see cref="PoolSlot{T}"/> it was rented through, so that
/// <see cref="PoolEx{T}"/> can take it back from the object alone.
/// </summary>
/// <typeparam name="T">The pooled type itself.</typeparam>
/// <remarks>
/// <see cref="PoolEx{T}"/> sets <see cref="PoolSlot"/> once, when it creates the object, and reads it on
/// every release. Implementations store the value in a plain auto-property and never change it
/// themselves. Thread safety: the pool writes the property before the object is handed to any taker
/// and only reads it afterwards, so a plain property is safe from any thread.
/// </remarks>
public interface IPoolSlotHolder<T> where T : class
{
    /// <summary>Gets or sets the slot that owns this object; <see langword="null"/> until a pool creates it.</summary>
    PoolSlot<T>? PoolSlot { get; set; }
}
