using System.Globalization;
using Microsoft.Extensions.Configuration;

namespace PoolLib.Internal;

/// <summary>
/// Fills <see cref="PoolOptions"/> from a configuration section, strictly: a key that names no option, a
/// value that does not convert, or one the options refuse fails with the key's full path. Each option is
/// named here, so nothing is looked up by reflection.
/// </summary>
internal static class PoolOptionsBinder
{
    private static readonly Setting[] s_settings =
    [
        new(nameof(PoolOptions.MaxCapacity), (options, value) => options.MaxCapacity = Number(value)),
        new(nameof(PoolOptions.Name), (options, value) => options.Name = value),
        new(nameof(PoolOptions.MinIdle), (options, value) => options.MinIdle = Number(value)),
        new(nameof(PoolOptions.IdleTimeout), (options, value) => options.IdleTimeout = Span(value)),
        new(nameof(PoolOptions.MaxObjectLifetime), (options, value) => options.MaxObjectLifetime = Span(value)),
        new(nameof(PoolOptions.LeakDetectionThreshold), (options, value) => options.LeakDetectionThreshold = Span(value)),
        new(nameof(PoolOptions.LeakSamplingInterval), (options, value) => options.LeakSamplingInterval = value.Length == 0 ? null : Number(value)),
        new(nameof(PoolOptions.AbandonedRentalTimeout), (options, value) => options.AbandonedRentalTimeout = Span(value)),
        new(nameof(PoolOptions.MaxConcurrentCreations), (options, value) => options.MaxConcurrentCreations = Number(value)),
        new(nameof(PoolOptions.CreateTimeout), (options, value) => options.CreateTimeout = Span(value)),
        new(nameof(PoolOptions.ValidateAfterIdle), (options, value) => options.ValidateAfterIdle = Span(value)),
        new(nameof(PoolOptions.FillMinIdle), (options, value) => options.FillMinIdle = Flag(value)),
    ];

    /// <summary>Makes the options <paramref name="section"/> holds, checked as a pool's constructor checks them.</summary>
    /// <param name="section">The section, by the options' property names; time spans as <c>hh:mm:ss</c> or <c>d.hh:mm:ss</c>.</param>
    /// <param name="paramName">The caller's name for <paramref name="section"/>, for the exception.</param>
    /// <exception cref="ArgumentException">A key or value is invalid; the message names its path.</exception>
    public static PoolOptions Bind(IConfiguration section, string paramName)
    {
        string path = section is IConfigurationSection { Path: var sectionPath } ? sectionPath : string.Empty;
        if (section is IConfigurationSection { Value: string scalar })
        {
            throw new ArgumentException($"'{path}' holds the value '{scalar}'; it should be a section of {nameof(PoolOptions)} settings.", paramName);
        }

        var options = new PoolOptions();
        foreach (IConfigurationSection child in section.GetChildren())
        {
            // A key that names no option is most likely a typo, which would otherwise leave a default in force silently.
            Setting setting = Array.Find(s_settings, candidate => candidate.Key.Equals(child.Key, StringComparison.OrdinalIgnoreCase))
                ?? throw new ArgumentException($"'{child.Path}' is not a setting of {nameof(PoolOptions)}; it takes {string.Join(", ", s_settings.Select(known => known.Key))}.", paramName);
            // A key under a setting is refused even where another source gives the setting a value, which would hide it.
            if (child.GetChildren().Any() || child.Value is not string value)
            {
                throw new ArgumentException($"'{child.Path}' is a section; it should be a value.", paramName);
            }

            try
            {
                setting.Set(options, value);
            }
            catch (FormatException expected)
            {
                throw new ArgumentException($"'{child.Path}' = '{value}': {expected.Message}", paramName);
            }
        }

        try
        {
            options.Validate();
        }
        catch (ArgumentException refused)
        {
            // The parameter is named options.Key; its message's first line says why.
            string key = refused.ParamName is { } name && name.StartsWith("options.", StringComparison.Ordinal) ? name["options.".Length..] : "?";
            string at = path.Length == 0 ? key : ConfigurationPath.Combine(path, key);
            throw new ArgumentException($"'{at}' = '{section[key]}': {refused.Message.Split(" (Parameter", 2)[0]}", paramName);
        }

        return options;
    }

    private static int Number(string value) =>
        int.TryParse(value, NumberStyles.Integer, CultureInfo.InvariantCulture, out int number)
            ? number
            : throw new FormatException("expects a whole number.");

    private static bool? Flag(string value) =>
        value.Length == 0 ? null
            : bool.TryParse(value, out bool flag) ? flag
            : throw new FormatException("expects true or false.");

    // Hours, minutes and seconds always: TimeSpan.Parse alone reads "5" as five days and "00:05" as five minutes.
    private static TimeSpan? Span(string value) =>
        value.Length == 0 ? null
            : value.AsSpan().Count(':') == 2 && TimeSpan.TryParse(value, CultureInfo.InvariantCulture, out TimeSpan span) ? span
            : throw new FormatException("expects a time span such as 00:05:00 (hh:mm:ss) or 1.00:00:00 (d.hh:mm:ss).");

    /// <summary>An option configuration can set, and how it converts the value.</summary>
    private sealed record Setting(string Key, Action<PoolOptions, string> Set);
}
