namespace PoolBench.Resp;

/// <summary>
/// One server, one redis-benchmark test and one pipeline depth of the <c>resp</c> scenario, as written to JSON: requests/s
/// is the median of its rounds, with the slowest and fastest; the latencies are the medians of the rounds' percentiles;
/// errors are summed. <see cref="ServerBytesPerRequest"/> is over whole redis-benchmark runs (every test, connections
/// included), where the server reports its allocations (ours); <see cref="RatioVsRedis"/> is ours over redis-server's.
/// </summary>
internal sealed record RespResult(
    string Server,
    string Test,
    int Clients,
    int Pipeline,
    int Requests,
    double RequestsPerSec,
    double RequestsPerSecMin,
    double RequestsPerSecMax,
    int Rounds,
    double P50Ms,
    double P99Ms,
    long Errors,
    double? ServerBytesPerRequest,
    double? RatioVsRedis)
{
    public string Scenario => "resp";
}
