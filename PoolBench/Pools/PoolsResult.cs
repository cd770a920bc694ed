namespace PoolBench.Pools;

/// <summary>
/// One cell of the pools comparison, as written to JSON. <see cref="BytesPerOp"/> is null when
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
    double Mops,
    double? RatioVsOurs,
    long OpsPerIteration,
    int Iterations)
{
    public string Scenario => "pools";
}
