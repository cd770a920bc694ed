using System.Globalization;
using System.Net;
using System.Reflection;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Options;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>Fills the servers' <see cref="SocketServerOptions"/> and the <see cref="TcpClientPoolOptions"/> from a
/// configuration section, strictly: an unknown key, a value that does not convert, or one the options' setters refuse
/// fails with the key's full path.</summary>
/// <remarks>The configuration binder sets every option but the few it cannot convert (an address, an endpoint, the pool's
/// options), which a <see cref="Special{TOptions}"/> of their own parses; options only code can set (a delegate) are
/// refused like unknown keys.</remarks>
internal static class OptionsBinder
{
    private static readonly Special<SocketServerOptions>[] s_server =
    [
        new(nameof(SocketServerOptions.Address), IsSection: false, static (options, setting, path) => options.Address = IPAddress.TryParse(setting.Value, out IPAddress? parsed)
            ? parsed
            : throw Invalid<SocketServerOptions>(options, $"'{path}' expects an IP address such as 127.0.0.1 or ::1, not '{setting.Value}'.")),
    ];

    // A TCP server's also: its trusted proxies (a list of networks, one value or an array), and its TLS section.
    private static readonly Special<SocketServerOptions>[] s_tcpServer =
    [
        .. s_server,
        new(nameof(TcpServerOptions.ProxyProtocolNetworks), IsSection: true, static (options, setting, path) => SetNetworks((TcpServerOptions)options, setting, path)),
        new(nameof(TcpServerOptions.Tls), IsSection: true, static (options, setting, path) => Bind(setting, ((TcpServerOptions)options).Tls, Array.Empty<Special<TlsOptions>>())),
    ];

    private static readonly Special<TcpClientPoolOptions>[] s_clientPool =
    [
        new(nameof(TcpClientPoolOptions.EndPoint), IsSection: false, static (options, setting, path) => options.EndPoint = ParseEndPoint(setting.Value!)
            ?? throw Invalid<TcpClientPoolOptions>(options, $"'{path}' expects an address or a host name and a port, such as 127.0.0.1:6379, [::1]:6379 or redis:6379, not '{setting.Value}'.")),
        new(nameof(TcpClientPoolOptions.Pool), IsSection: true, static (options, setting, path) =>
        {
            try
            {
                options.Pool = PoolOptions.FromConfiguration(setting);
            }
            catch (ArgumentException refused)
            {
                throw Invalid<TcpClientPoolOptions>(options, FirstLine(refused.Message));
            }
        }),
    ];

    /// <summary>Sets every option <paramref name="section"/> names on a server's <paramref name="options"/>.</summary>
    /// <typeparam name="TOptions">The server's options type.</typeparam>
    /// <exception cref="OptionsValidationException">A key or value is invalid; the message names it.</exception>
    public static void Bind<TOptions>(IConfiguration section, TOptions options)
        where TOptions : SocketServerOptions
        => Bind(section, options, options is TcpServerOptions ? s_tcpServer : s_server);

    /// <summary>Sets every option <paramref name="section"/> names on a client pool's <paramref name="options"/>; the
    /// pool's own options (<see cref="TcpClientPoolOptions.Pool"/>) come from its <c>Pool</c> section, as
    /// <see cref="PoolOptions.FromConfiguration"/> reads them.</summary>
    /// <exception cref="OptionsValidationException">A key or value is invalid; the message names it.</exception>
    public static void Bind(IConfiguration section, TcpClientPoolOptions options) => Bind(section, options, s_clientPool);

    private static void Bind<TOptions, TBase>(IConfiguration section, TOptions options, Special<TBase>[] specials)
        where TOptions : class, TBase
    {
        string path = section is IConfigurationSection { Path: var sectionPath } ? sectionPath : string.Empty;
        if (section is IConfigurationSection { Value: string scalar })
        {
            throw Invalid<TOptions>($"'{path}' holds the value '{scalar}'; it should be a section of {typeof(TOptions).Name} settings.");
        }

        CheckKeys<TOptions, TBase>(section, specials);
        try
        {
            // The binder cannot convert the specials (an IPAddress has no type converter), so they are parsed here and
            // every other key is bound from a copy of the section without them, at the same path.
            IConfigurationRoot rest = new ConfigurationBuilder()
                .AddInMemoryCollection(section.AsEnumerable(makePathsRelative: true)
                    .Where(pair => pair.Value is not null && !Array.Exists(specials, special => IsUnder(pair.Key, special.Key)))
                    .Select(pair => KeyValuePair.Create(ConfigurationPath.Combine(PathOf(path, pair.Key)), pair.Value)))
                .Build();
            IConfiguration bound = path.Length == 0 ? rest : rest.GetSection(path);
            bound.Bind(options, binder => binder.ErrorOnUnknownConfiguration = true);
            foreach (Special<TBase> special in specials)
            {
                IConfigurationSection setting = section.GetSection(special.Key);
                if (setting.Exists())
                {
                    special.Set(options, setting, ConfigurationPath.Combine(PathOf(path, special.Key)));
                }
            }
        }
        catch (TargetInvocationException ex) when (ex.InnerException is ArgumentException refused)
        {
            // A setter refused the value; its message says why, after the property's name.
            string key = ConfigurationPath.Combine(PathOf(path, refused.ParamName ?? "?"));
            throw Invalid<TOptions>($"'{key}' = '{section[refused.ParamName ?? string.Empty]}': {FirstLine(refused.Message)}");
        }
        catch (InvalidOperationException ex)
        {
            // The binder's own messages name the key, except for a section where a value belongs.
            throw Invalid<TOptions>(ex.Message.Contains(path, StringComparison.Ordinal) ? ex.Message : $"'{path}': {ex.Message}");
        }
    }

    /// <summary>Checks each key of <paramref name="section"/> names an option of <typeparamref name="TOptions"/>, a value
    /// where one belongs, and, for an enum, one of its names.</summary>
    /// <exception cref="OptionsValidationException">A key or value is invalid; the message names it.</exception>
    private static void CheckKeys<TOptions, TBase>(IConfiguration section, Special<TBase>[] specials)
    {
        // A key that names no option is most likely a typo, which would otherwise leave a default in force silently.
        PropertyInfo[] settable = [.. typeof(TOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance)
            .Where(property => property.SetMethod is { IsPublic: true } && !property.PropertyType.IsSubclassOf(typeof(Delegate)))];
        foreach (IConfigurationSection child in section.GetChildren())
        {
            // Every option but a section of its own is one value. A key under one is refused even where another source
            // gives the option a value, which would hide it from the binder.
            bool isSection = Array.Exists(specials, special => special.IsSection && special.Key.Equals(child.Key, StringComparison.OrdinalIgnoreCase));
            PropertyInfo? property = settable.FirstOrDefault(property => property.Name.Equals(child.Key, StringComparison.OrdinalIgnoreCase));
            if (property is null && !isSection)
            {
                throw Invalid<TOptions>($"'{child.Path}' is not a setting of {typeof(TOptions).Name}.");
            }

            if (!isSection && child.GetChildren().FirstOrDefault() is { } nested)
            {
                throw Invalid<TOptions>($"'{child.Path}' is a section ('{nested.Path}'); it should be a value.");
            }

            // The binder's own message for a name it cannot convert names the type, not the names it takes.
            if (property is { PropertyType.IsEnum: true } && child.Value is string name
                && !(Enum.TryParse(property.PropertyType, name, ignoreCase: true, out object? value) && Enum.IsDefined(property.PropertyType, value)))
            {
                throw Invalid<TOptions>($"'{child.Path}' expects {string.Join(" or ", Enum.GetNames(property.PropertyType))}, not '{name}'.");
            }
        }
    }

    /// <summary>Reads <c>address:port</c> (<c>[v6]:port</c> for IPv6) as an <see cref="IPEndPoint"/>, <c>name:port</c> as a
    /// <see cref="DnsEndPoint"/>; null for anything else, a missing port or port 0 included.</summary>
    private static EndPoint? ParseEndPoint(string value)
    {
        if (IPEndPoint.TryParse(value, out IPEndPoint? address))
        {
            return address.Port != 0 ? address : null;
        }

        int colon = value.LastIndexOf(':');
        return colon > 0 && Uri.CheckHostName(value[..colon]) == UriHostNameType.Dns
            && int.TryParse(value.AsSpan(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out int port) && port is > 0 and <= IPEndPoint.MaxPort
            ? new DnsEndPoint(value[..colon], port)
            : null;
    }

    /// <summary>Sets the trusted proxies' networks from one value of comma-separated CIDR blocks, or from an array of them.</summary>
    private static void SetNetworks(TcpServerOptions options, IConfigurationSection setting, string path)
    {
        IEnumerable<string> blocks = setting.Value is { } value
            ? value.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries)
            : setting.GetChildren().Select(child => child.Value ?? string.Empty);
        options.ProxyProtocolNetworks.Clear();
        foreach (string block in blocks)
        {
            options.ProxyProtocolNetworks.Add(IPNetwork.TryParse(block, out IPNetwork network)
                ? network
                : throw Invalid<SocketServerOptions>(options, $"'{path}' expects networks in CIDR notation such as 10.0.0.0/8 or fd00::/8, separated by commas, not '{block}'."));
        }
    }

    private static bool IsUnder(string key, string special) =>
        key.Equals(special, StringComparison.OrdinalIgnoreCase)
        || key.StartsWith(special + ConfigurationPath.KeyDelimiter, StringComparison.OrdinalIgnoreCase);

    private static string[] PathOf(string path, string key) => path.Length == 0 ? [key] : [path, key];

    // ArgumentException messages end with "(Parameter 'X')" and, out of range, a second line with the value.
    private static string FirstLine(string message)
    {
        int end = message.IndexOf(" (Parameter", StringComparison.Ordinal);
        return end < 0 ? message.Split('\n')[0] : message[..end];
    }

    private static OptionsValidationException Invalid<TOptions>(string message) =>
        new(Options.DefaultName, typeof(TOptions), [message]);

    // Named for the options' own type, which the specials of a base type know only as an instance.
    private static OptionsValidationException Invalid<TBase>(TBase options, string message) =>
        new(Options.DefaultName, options!.GetType(), [message]);

    /// <summary>An option the configuration binder cannot set, and how it is parsed: from a value, or from a section.</summary>
    private sealed record Special<TOptions>(string Key, bool IsSection, Action<TOptions, IConfigurationSection, string> Set);
}
