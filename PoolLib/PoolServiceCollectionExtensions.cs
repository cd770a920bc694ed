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
    /// <remarks>The container disposes the pool, and with it the idle objects, when it is disposed.</remarks>
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
}
