using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>Registers a <see cref="TcpClientPool"/> with a dependency-injection container.</summary>
/// <remarks>
/// Each method registers one singleton pool, made when it is first resolved, that logs through the container's
/// <see cref="ILoggerFactory"/>, if it has one; the container disposes it, closing its connections, when it is disposed.
/// Calling a method again configures the same pool: the options of every call apply, in order. The options are read
/// when the pool is first resolved; an invalid value then throws <see cref="OptionsValidationException"/> naming it.
/// </remarks>
public static class TcpClientPoolServiceCollectionExtensions
{
    /// <summary>Registers a <see cref="TcpClientPool"/> configured in code.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configure">Sets the pool's options: at least <see cref="TcpClientPoolOptions.EndPoint"/> and the
    /// cap, <see cref="PoolLib.PoolOptions.MaxCapacity"/>.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configure"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpClientPool(this IServiceCollection services, Action<TcpClientPoolOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddOptions<TcpClientPoolOptions>()
            .Configure(configure)
            .Validate(options => options.EndPoint is not null, $"{nameof(TcpClientPoolOptions)}.{nameof(TcpClientPoolOptions.EndPoint)} is required: the server to connect to.");
        services.TryAddSingleton(provider => new TcpClientPool(
            provider.GetRequiredService<IOptions<TcpClientPoolOptions>>().Value, provider.GetService<ILoggerFactory>()?.CreateLogger<TcpClientPool>()));
        return services;
    }

    /// <summary>Registers a <see cref="TcpClientPool"/> whose options are bound from configuration.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configuration">The section holding the options, by their property names: <c>EndPoint</c> as
    /// <c>127.0.0.1:6379</c>, <c>[::1]:6379</c> or <c>redis:6379</c>, <c>KeepAliveTime</c> as <c>hh:mm:ss</c>, ..., and
    /// the pool's own options in a <c>Pool</c> section (<c>MaxCapacity</c>, <c>CreateTimeout</c>, ...). A key that names
    /// no option is an error; <see cref="TcpClientPoolOptions.HealthCheck"/> is set in code, with the other overload.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configuration"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpClientPool(this IServiceCollection services, IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddTcpClientPool(options => OptionsBinder.Bind(configuration, options));
    }
}
