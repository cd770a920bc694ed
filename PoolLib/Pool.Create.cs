using System.Diagnostics.CodeAnalysis;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>Makes pools without a subclass, from a factory and an optional clean-up.</summary>
public static class Pool
{
    /// <summary>Creates a pool that makes its objects with <paramref name="factory"/>.</summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="maxCapacity">The cap on objects alive at once (idle plus rented); at least 1.</param>
    /// <param name="factory">Makes one new object; never returns <see langword="null"/>. Called while the cap allows one more.</param>
    /// <param name="cleanUp">Resets an object on its way back (see <see cref="Pool{T}.CleanUp"/>); <see langword="null"/> for none.</param>
    /// <returns>A pool named <c>Pool&lt;T&gt;</c> after <typeparamref name="T"/>'s name.</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxCapacity"/> is less than 1.</exception>
    /// <exception cref="ArgumentNullException"><paramref name="factory"/> is <see langword="null"/>.</exception>
    [SuppressMessage("ApiDesign", "RS0026", Justification = "The overloads differ in their first parameter, never in the optional clean-up.")]
    public static Pool<T> Create<T>(int maxCapacity, Func<T> factory, Action<T>? cleanUp = null)
        where T : class
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxCapacity, 1);
        return Create(new PoolOptions { MaxCapacity = maxCapacity }, factory, cleanUp);
    }

    /// <summary>Creates a pool as <paramref name="options"/> say, that makes its objects with <paramref name="factory"/>.</summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="options">The cap, the name and the optional features; read once, here.</param>
    /// <param name="factory">Makes one new object; never returns <see langword="null"/>. Called while the cap allows one more.</param>
    /// <param name="cleanUp">Resets an object on its way back (see <see cref="Pool{T}.CleanUp"/>); <see langword="null"/> for none.</param>
    /// <returns>A pool named <see cref="PoolOptions.Name"/>, or <c>Pool&lt;T&gt;</c> after <typeparamref name="T"/>'s name.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="factory"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the parameter name names it.</exception>
    /// <exception cref="ArgumentException"><see cref="PoolOptions.Name"/> is empty or white space.</exception>
    [SuppressMessage("ApiDesign", "RS0026", Justification = "The overloads differ in their first parameter, never in the optional clean-up.")]
    public static Pool<T> Create<T>(PoolOptions options, Func<T> factory, Action<T>? cleanUp = null)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(factory);
        return new FactoryPool<T>(options, factory, cleanUp);
    }

    /// <summary>
    /// Creates a pool as <paramref name="options"/> say, that makes its objects asynchronously with <paramref name="factory"/>,
    /// in the background (see <see cref="Pool{T}.ObjectConstructorAsync"/>), and begins filling <see cref="PoolOptions.MinIdle"/>.
    /// </summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="options">The cap, the name, the bounds on creation and the optional features; read once, here.</param>
    /// <param name="factory">
    /// Makes one new object, for example a connection; never returns <see langword="null"/>. Its token is cancelled at
    /// <see cref="PoolOptions.CreateTimeout"/> or when the pool is disposed.
    /// </param>
    /// <param name="cleanUp">Resets an object on its way back (see <see cref="Pool{T}.CleanUp"/>); <see langword="null"/> for none.</param>
    /// <returns>A pool named <see cref="PoolOptions.Name"/>, or <c>Pool&lt;T&gt;</c> after <typeparamref name="T"/>'s name.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="factory"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range; the parameter name names it.</exception>
    /// <exception cref="ArgumentException"><see cref="PoolOptions.Name"/> is empty or white space.</exception>
    /// <remarks>
    /// <see cref="Pool{T}.TakeSlotAsync"/> never blocks a thread on a creation; <see cref="Pool{T}.TakeSlot"/> and
    /// <see cref="Pool{T}.TryTakeSlot(TimeSpan, out PoolSlot{T})"/> block only their caller. MinIdle, filled from here on,
    /// is how such a pool is pre-warmed.
    /// </remarks>
    [SuppressMessage("ApiDesign", "RS0026", Justification = "The overloads differ in their first parameter, never in the optional clean-up.")]
    public static Pool<T> Create<T>(PoolOptions options, Func<CancellationToken, ValueTask<T>> factory, Action<T>? cleanUp = null)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(factory);
        return new AsyncFactoryPool<T>(options, factory, cleanUp);
    }
}
