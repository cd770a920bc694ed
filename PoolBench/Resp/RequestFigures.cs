using PoolBench.Report;

namespace PoolBench.Resp;

/// <summary>What one test (SET, GET, ...) of one client did in one round: requests/s and latency percentiles in milliseconds.</summary>
internal sealed record RequestFigures(string Test, double RequestsPerSec, double P50Ms, double P99Ms)
{
    /// <summary>
    /// A test's rounds as the tables give them: the median requests/s with the slowest and fastest round, and the medians
    /// of the rounds' percentiles.
    /// </summary>
    public static (double RequestsPerSec, double Min, double Max, double P50Ms, double P99Ms) Summarise(IReadOnlyCollection<RequestFigures> rounds) => (
        Median.Of(rounds.Select(round => round.RequestsPerSec)),
        rounds.Min(round => round.RequestsPerSec),
        rounds.Max(round => round.RequestsPerSec),
        Median.Of(rounds.Select(round => round.P50Ms)),
        Median.Of(rounds.Select(round => round.P99Ms)));
}
