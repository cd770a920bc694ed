using System.Diagnostics.CodeAnalysis;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.ObjectPool;

namespace PoolLib;

/// <summary>Registers pools with a dependency-injection container.</summary>
public static class PoolServiceCollectionExtensions
{
    /// <summary>
    /// Registers a singleton <see cref="Pool{T}"/> made as <see cref="Pool.Create{T}(PoolOptions, Func{T}, Action{T}?)"/>
    /// does, and a singleton <see cref="ObjectPool{T}"/> over it (see <see cref="PoolObjectPoolExtensions.AsObjectPool{T}(Pool{T})"/>).
    /// </summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="services">The container's registrations.</param>
    /// <param name="options">The pool's options; read when the pool is first resolved.</param>
    /// <param name="factory">Makes one new object from the container's services.</param>
    /// <param name="cleanUp">Resets an object on its way back; <see langword="null"/> for none.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/>, <paramref name="options"/> or <paramref name="factory"/> is <see langword="null"/>.</exception>
    /// <remarks>
    /// The container disposes the pool, and with it the idle objects, when it is disposed. Without
    /// <paramref name="cleanUp"/>, an object that is <see cref="IResettable"/> is reset with
    /// <see cref="IResettable.TryReset"/> on each release, and discarded when that returns false.
    /// </remarks>
    [SuppressMessage("ApiDesign", "RS0026", Justification = "The overloads differ in where the options come from, never in the optional clean-up.")]
    public static IServiceCollection AddPool<T>(this IServiceCollection services, PoolOptions options, Func<IServiceProvider, T> factory, Action<T>? cleanUp = null)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(factory);
        services.AddSingleton(provider => Pool.Create(options, () => factory(provider), cleanUp));
        services.AddSingleton(provider => provider.GetRequiredService<Pool<T>>().AsObjectPool());
        return services;
    }

    /// <summary>
    /// Registers a singleton <see cref="Pool{T}"/> and an <see cref="ObjectPool{T}"/> over it, as
    /// <see cref="AddPool{T}(IServiceCollection, PoolOptions, Func{IServiceProvider, T}, Action{T}?)"/> does,
    /// with options read from configuration now.
    /// </summary>
    /// <typeparam name="T">The pooled type.</typeparam>
    /// <param name="services">The container's registrations.</param>
    /// <param name="section">
    /// The section holding the options, by their property names (<c>MaxCapacity</c>, <c>Name</c>,
    /// <c>IdleTimeout</c> as <c>hh:mm:ss</c>, ...); <see cref="PoolOptions.TimeProvider"/> cannot be set here.
    /// </param>
    /// <param name="factory">Makes one new object from the container's services.</param>
    /// <param name="cleanUp">Resets an object on its way back; <see langword="null"/> for none.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/>, <paramref name="section"/> or <paramref name="factory"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">
    /// A key of <paramref name="section"/> names no option, or its value does not convert or is out of
    /// range; the message names the key's full path.
    /// </exception>
    [SuppressMessage("ApiDesign", "RS0026", Justification = "The overloads differ in where the options come from, never in the optional clean-up.")]
    public static IServiceCollection AddPool<T>(this IServiceCollection services, IConfiguration section, Func<IServiceProvider, T> factory, Action<T>? cleanUp = null)
        where T : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(section);
        ArgumentNullException.ThrowIfNull(factory);
        return services.AddPool(PoolOptions.FromConfiguration(section), factory, cleanUp);
    }
}
