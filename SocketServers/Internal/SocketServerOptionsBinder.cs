using System.Net;
using System.Reflection;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Options;

namespace SocketServers.Internal;

/// <summary>Fills <see cref="SocketServerOptions"/> from a configuration section, strictly: an unknown key, a value
/// that does not convert, or one the options' setters refuse fails with the key's full path.</summary>
internal static class SocketServerOptionsBinder
{
    private const string AddressKey = nameof(SocketServerOptions.Address);

    /// <summary>Sets every option <paramref name="section"/> names on <paramref name="options"/>.</summary>
    /// <typeparam name="TOptions">The server's options type.</typeparam>
    /// <exception cref="OptionsValidationException">A key or value is invalid; the message names it.</exception>
    public static void Bind<TOptions>(IConfiguration section, TOptions options)
        where TOptions : SocketServerOptions
    {
        string path = section is IConfigurationSection { Path: var sectionPath } ? sectionPath : string.Empty;
        if (section is IConfigurationSection { Value: string scalar })
        {
            throw Invalid<TOptions>($"'{path}' holds the value '{scalar}'; it should be a section of {typeof(TOptions).Name} settings.");
        }

        // A key that names no option is most likely a typo, which would otherwise leave a default in force silently.
        PropertyInfo[] settable = [.. typeof(TOptions).GetProperties(BindingFlags.Public | BindingFlags.Instance).Where(property => property.SetMethod is { IsPublic: true })];
        foreach (IConfigurationSection child in section.GetChildren())
        {
            if (settable.FirstOrDefault(property => property.Name.Equals(child.Key, StringComparison.OrdinalIgnoreCase)) is not { } property)
            {
                throw Invalid<TOptions>($"'{child.Path}' is not a setting of {typeof(TOptions).Name}.");
            }

            // Every option is one value. A key under one is refused even where another source gives the option a value,
            // which would hide it from the binder.
            if (child.GetChildren().FirstOrDefault() is { } nested)
            {
                throw Invalid<TOptions>($"'{child.Path}' is a section ('{nested.Path}'); it should be a value.");
            }

            // The binder's own message for a name it cannot convert names the type, not the names it takes.
            if (property.PropertyType.IsEnum && child.Value is string name
                && !(Enum.TryParse(property.PropertyType, name, ignoreCase: true, out object? value) && Enum.IsDefined(property.PropertyType, value)))
            {
                throw Invalid<TOptions>($"'{child.Path}' expects {string.Join(" or ", Enum.GetNames(property.PropertyType))}, not '{name}'.");
            }
        }

        try
        {
            // The binder cannot convert a string to IPAddress (it has no type converter), so Address is parsed
            // here and every other key is bound from a copy of the section without it, at the same path.
            IConfigurationRoot rest = new ConfigurationBuilder()
                .AddInMemoryCollection(section.AsEnumerable(makePathsRelative: true)
                    .Where(pair => pair.Value is not null && !pair.Key.Equals(AddressKey, StringComparison.OrdinalIgnoreCase))
                    .Select(pair => KeyValuePair.Create(ConfigurationPath.Combine(PathOf(path, pair.Key)), pair.Value)))
                .Build();
            IConfiguration bound = path.Length == 0 ? rest : rest.GetSection(path);
            bound.Bind(options, binder => binder.ErrorOnUnknownConfiguration = true);
            if (section[AddressKey] is string address)
            {
                options.Address = IPAddress.TryParse(address, out IPAddress? parsed)
                    ? parsed
                    : throw Invalid<TOptions>($"'{ConfigurationPath.Combine(PathOf(path, AddressKey))}' expects an IP address such as 127.0.0.1 or ::1, not '{address}'.");
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

    private static string[] PathOf(string path, string key) => path.Length == 0 ? [key] : [path, key];

    // ArgumentException messages end with "(Parameter 'X')" and, out of range, a second line with the value.
    private static string FirstLine(string message)
    {
        int end = message.IndexOf(" (Parameter", StringComparison.Ordinal);
        return end < 0 ? message.Split('\n')[0] : message[..end];
    }

    private static OptionsValidationException Invalid<TOptions>(string message) =>
        new(Options.DefaultName, typeof(TOptions), [message]);
}
