using PoolBench.Resp;

namespace PoolBench.Connections;

/// <summary>
/// One test of one peer in one round: its requests/s and latency percentiles, the requests it ran, what this process
/// allocated and the thread pool's most threads over the measured window (null for redis-benchmark, another process),
/// and the requests that failed.
/// </summary>
internal sealed record TestRound(RequestFigures Figures, long Requests, long? AllocatedBytes, int? PeakThreads, long Errors);
