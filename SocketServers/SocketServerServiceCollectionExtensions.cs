using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Options;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>Registers the servers (the echo servers, and servers of a handler's protocol) with a dependency-injection
/// container, as hosted services of the Generic Host.</summary>
/// <remarks>
/// Each method registers one singleton server, resolvable as itself (for its <see cref="SocketServer.LocalEndPoint"/> and
/// <see cref="SocketServer.Counters"/>), that the host starts with the application and stops, within the stop grace
/// period, when the application stops; it logs through the container's <see cref="ILoggerFactory"/>, if it has one.
/// Calling a method again for the same protocol configures the same server: the options of every call apply, in order.
/// The options are read when the server is first resolved; an invalid value then throws
/// <see cref="OptionsValidationException"/> naming it. They are options of the Generic Host, which
/// <c>Configure</c>, <c>PostConfigure</c> and <c>Validate</c> may amend too: the echo servers' are the unnamed
/// <see cref="TcpEchoServerOptions"/> and <see cref="UdpEchoServerOptions"/>; a handler's server's are the
/// <see cref="TcpServerOptions"/> or <see cref="UdpServerOptions"/> named <see cref="OptionsName{THandler}"/>.
/// </remarks>
public static class SocketServerServiceCollectionExtensions
{
    /// <summary>Registers a <see cref="TcpEchoServer"/> with the default options (127.0.0.1, port
    /// <see cref="SocketServerOptions.DefaultPort"/>), unless another call sets them.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpEchoServer(this IServiceCollection services)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.AddOptions<TcpEchoServerOptions>();
        return AddServer(services, (provider, logger) => new TcpEchoServer(provider.GetRequiredService<IOptions<TcpEchoServerOptions>>().Value, logger));
    }

    /// <summary>Registers a <see cref="TcpEchoServer"/> configured in code.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configure">Sets the server's options.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configure"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpEchoServer(this IServiceCollection services, Action<TcpEchoServerOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(configure);
        services.AddTcpEchoServer().Configure(configure);
        return services;
    }

    /// <summary>Registers a <see cref="TcpEchoServer"/> whose options are bound from configuration.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configuration">The section holding the options, by their property names (<c>Port</c>,
    /// <c>MaxConnections</c>, <c>IdleTimeout</c> as <c>hh:mm:ss</c>, ...); a key that names no option is an error.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configuration"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpEchoServer(this IServiceCollection services, IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddTcpEchoServer(options => OptionsBinder.Bind(configuration, options));
    }

    /// <summary>Registers a <see cref="UdpEchoServer"/> with the default options (127.0.0.1, port
    /// <see cref="SocketServerOptions.DefaultPort"/>), unless another call sets them.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddUdpEchoServer(this IServiceCollection services)
    {
        ArgumentNullException.ThrowIfNull(services);
        services.AddOptions<UdpEchoServerOptions>();
        return AddServer(services, (provider, logger) => new UdpEchoServer(provider.GetRequiredService<IOptions<UdpEchoServerOptions>>().Value, logger));
    }

    /// <summary>Registers a <see cref="UdpEchoServer"/> configured in code.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configure">Sets the server's options.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configure"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddUdpEchoServer(this IServiceCollection services, Action<UdpEchoServerOptions> configure)
    {
        ArgumentNullException.ThrowIfNull(configure);
        services.AddUdpEchoServer().Configure(configure);
        return services;
    }

    /// <summary>Registers a <see cref="UdpEchoServer"/> whose options are bound from configuration.</summary>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configuration">The section holding the options, by their property names (<c>Port</c>,
    /// <c>MaxDatagramSize</c>, <c>Processing</c> as <c>ReceiveThreads</c> or <c>ReplyBlock</c>, ...); a key that
    /// names no option is an error.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configuration"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddUdpEchoServer(this IServiceCollection services, IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddUdpEchoServer(options => OptionsBinder.Bind(configuration, options));
    }

    /// <summary>Registers a <see cref="TcpServer{THandler}"/> configured in code, with its handler: a singleton the
    /// container makes (so it may take services) unless one is registered already.</summary>
    /// <typeparam name="THandler">The protocol.</typeparam>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configure">Sets the server's options, starting from the defaults of <see cref="TcpServerOptions"/>.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configure"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpServer<THandler>(this IServiceCollection services, Action<TcpServerOptions> configure)
        where THandler : TcpConnectionHandler
        => AddHandlerServer<TcpServerOptions, THandler, TcpServer<THandler>>(services, configure, static (options, handler, logger) => new TcpServer<THandler>(options, handler, logger));

    /// <summary>Registers a <see cref="TcpServer{THandler}"/> whose options are bound from configuration, with its handler
    /// (see <see cref="AddTcpServer{THandler}(IServiceCollection, Action{TcpServerOptions})"/>).</summary>
    /// <typeparam name="THandler">The protocol.</typeparam>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configuration">The section holding the options, by their property names; a key that names no option
    /// is an error.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configuration"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddTcpServer<THandler>(this IServiceCollection services, IConfiguration configuration)
        where THandler : TcpConnectionHandler
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddTcpServer<THandler>(options => OptionsBinder.Bind(configuration, options));
    }

    /// <summary>Registers a <see cref="UdpServer{THandler}"/> configured in code, with its handler: a singleton the
    /// container makes (so it may take services) unless one is registered already.</summary>
    /// <typeparam name="THandler">The protocol.</typeparam>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configure">Sets the server's options, starting from the defaults of <see cref="UdpServerOptions"/>.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configure"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddUdpServer<THandler>(this IServiceCollection services, Action<UdpServerOptions> configure)
        where THandler : UdpDatagramHandler
        => AddHandlerServer<UdpServerOptions, THandler, UdpServer<THandler>>(services, configure, static (options, handler, logger) => new UdpServer<THandler>(options, handler, logger));

    /// <summary>Registers a <see cref="UdpServer{THandler}"/> whose options are bound from configuration, with its handler
    /// (see <see cref="AddUdpServer{THandler}(IServiceCollection, Action{UdpServerOptions})"/>).</summary>
    /// <typeparam name="THandler">The protocol.</typeparam>
    /// <param name="services">The container's registrations.</param>
    /// <param name="configuration">The section holding the options, by their property names; a key that names no option
    /// is an error.</param>
    /// <returns><paramref name="services"/>, for chaining.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="configuration"/> is <see langword="null"/>.</exception>
    public static IServiceCollection AddUdpServer<THandler>(this IServiceCollection services, IConfiguration configuration)
        where THandler : UdpDatagramHandler
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return services.AddUdpServer<THandler>(options => OptionsBinder.Bind(configuration, options));
    }

    /// <summary>Registers the server of a handler type: its options by the handler's name, the handler, the server.</summary>
    private static IServiceCollection AddHandlerServer<TOptions, THandler, TServer>(
        IServiceCollection services, Action<TOptions> configure, Func<TOptions, THandler, ILogger?, TServer> create)
        where TOptions : SocketServerOptions
        where THandler : class
        where TServer : SocketServer
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        string name = OptionsName<THandler>();
        services.AddOptions<TOptions>(name).Configure(configure);
        services.TryAddSingleton<THandler>();
        return AddServer(services, (provider, logger) => create(
            provider.GetRequiredService<IOptionsMonitor<TOptions>>().Get(name), provider.GetRequiredService<THandler>(), logger));
    }

    /// <summary>Gets the name of the options of <typeparamref name="THandler"/>'s server, as
    /// <see cref="AddTcpServer{THandler}(IServiceCollection, Action{TcpServerOptions})"/> and
    /// <see cref="AddUdpServer{THandler}(IServiceCollection, Action{UdpServerOptions})"/> register them: the handler type's
    /// full name (<see cref="Type.FullName"/>), so that servers of different protocols have options of their own.</summary>
    /// <typeparam name="THandler">The protocol.</typeparam>
    /// <returns>The name to configure or read the options under, for example with
    /// <c>services.PostConfigure&lt;TcpServerOptions&gt;(name, ...)</c> or <c>IOptionsMonitor&lt;TcpServerOptions&gt;.Get(name)</c>.</returns>
    public static string OptionsName<THandler>() => typeof(THandler).FullName ?? typeof(THandler).Name;

    private static IServiceCollection AddServer<TServer>(IServiceCollection services, Func<IServiceProvider, ILogger?, TServer> create)
        where TServer : SocketServer
    {
        // The container owns the server and disposes it (asynchronously) with itself.
        services.TryAddSingleton(provider => create(provider, provider.GetService<ILoggerFactory>()?.CreateLogger<TServer>()));
        services.AddHostedService(provider => provider.GetRequiredService<TServer>());
        return services;
    }
}
