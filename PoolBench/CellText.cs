using System.Globalization;

namespace PoolBench;

/// <summary>How numbers are written in the markdown tables: invariant culture, fixed precision per kind.</summary>
internal static class CellText
{
    public static string Count(long value) => value.ToString("N0", CultureInfo.InvariantCulture);

    public static string Seconds(double seconds) => seconds.ToString(seconds < 0.1 ? "0.00000" : "0.000", CultureInfo.InvariantCulture);

    public static string Number(double value, int decimals = 1) => value.ToString("N" + decimals, CultureInfo.InvariantCulture);

    public static string Spread(double min, double max, Func<double, string> format) => $"{format(min)}–{format(max)}";

    public static string Ratio(double? ratio) => ratio is double r ? r.ToString("0.00", CultureInfo.InvariantCulture) + "×" : "—";

    public static string Optional(double? value, int decimals = 1) => value is double v ? Number(v, decimals) : "—";

    /// <summary>
    /// A rate of rare events: "—" when not measured, "0" when none happened, otherwise three
    /// significant digits (at least), so that a small rate never prints as zero.
    /// </summary>
    public static string Rate(double? value) => value switch
    {
        null => "—",
        0 => "0",
        double v => Number(v, Math.Max(0, 2 - (int)Math.Floor(Math.Log10(v)))),
    };
}
