namespace PoolBench.Connections;

/// <summary>
/// One peer, one test and one worker count of the <c>connections</c> scenario, as written to JSON: requests/s is the
/// median of its rounds, with the slowest and fastest; the latencies are the medians of the rounds' percentiles; errors
/// are summed; <see cref="BytesPerRequest"/> is this process's allocation over every round's measured window over their
/// requests, and <see cref="PeakThreads"/> the thread pool's most threads in any (both null for redis-benchmark). The
/// ratios, on <c>TcpClientPool</c>'s rows, are its requests/s over the hand-written pool's and over redis-benchmark's.
/// </summary>
internal sealed record ConnectionsResult(
    string Peer,
    string Test,
    int Workers,
    int Requests,
    int Rounds,
    double RequestsPerSec,
    double RequestsPerSecMin,
    double RequestsPerSecMax,
    double P50Ms,
    double P99Ms,
    long Errors,
    double? BytesPerRequest,
    int? PeakThreads,
    double? RatioVsHandWritten,
    double? RatioVsRedisBenchmark)
{
    public string Scenario => "connections";
}
