using System.Globalization;

namespace PoolBench.Report;

/// <summary>How numbers are written in the markdown tables: invariant culture, fixed precision per kind.</summary>
internal static class CellText
{
    public static string Count(long value) => value.ToString("N0", CultureInfo.InvariantCulture);

    public static string Seconds(double seconds) => seconds.ToString(seconds < 0.1 ? "0.00000" : "0.000", CultureInfo.InvariantCulture);

    public static string Number(double value, int decimals = 1) => value.ToString("N" + decimals, CultureInfo.InvariantCulture);

    public static string Spread(double min, double max, Func<double, string> format) => $"{format(min)}–{format(max)}";

    public static string Ratio(double? ratio) => ratio is double r ? r.ToString("0.00", CultureInfo.InvariantCulture) + "×" : "—";

    public static string Optional(double? value, int decimals = 1) => value is double v ? Number(v, decimals) : "—";
}
