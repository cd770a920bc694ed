namespace PoolBench.Report;

/// <summary>The median of a cell's rounds: the middle value, or the mean of the two middle values of an even count.</summary>
internal static class Median
{
    /// <exception cref="InvalidOperationException">There are no values.</exception>
    public static double Of(IEnumerable<double> values)
    {
        double[] sorted = [.. values.Order()];
        if (sorted.Length == 0)
        {
            throw new InvalidOperationException("the median of no values");
        }

        return sorted.Length % 2 == 1 ? sorted[sorted.Length / 2] : (sorted[(sorted.Length / 2) - 1] + sorted[sorted.Length / 2]) / 2;
    }
}
