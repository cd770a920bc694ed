using System.Text.Json.Serialization;

namespace PoolBench;

/// <summary>
/// One cell of the pools comparison, as written to JSON. <see cref="BarriersPer1kPairs"/> is null
/// for the peers, which run no process-wide barriers of ours; <see cref="BytesPerOp"/> is null when
/// BenchmarkDotNet's memory diagnoser gave no figure.
/// </summary>
internal sealed record PoolsResult(
    string Impl,
    string Pattern,
    int Capacity,
    int Workers,
    int HeldPerWorker,
    double NsPerOp,
    double NsPerOpMin,
    double NsPerOpMax,
    double? BytesPerOp,
    // Named by hand: the snake_case policy keeps a digit with its word and would write "barriers_per1k_pairs".
    [property: JsonPropertyName("barriers_per_1k_pairs")] double? BarriersPer1kPairs,
    double Mops,
    double? RatioVsOurs,
    long OpsPerIteration,
    int Iterations)
{
    public string Scenario => "pools";
}
