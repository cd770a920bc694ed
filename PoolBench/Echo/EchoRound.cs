using PoolBench.Echo.Load;

namespace PoolBench.Echo;

/// <summary>
/// What one server did in one round of an echo cell, before the rounds are reduced to an
/// <see cref="EchoResult"/>. <see cref="AllocatedBytes"/> is this process's allocation over the
/// measured window; <see cref="ClientAllocatedBytes"/> is the part the clients in it counted themselves;
/// <see cref="ChildAllocatedBytes"/> what client processes allocated over theirs;
/// <see cref="ServerAllocatedBytes"/> what a server in its own process allocated over the same window,
/// where it tells. <see cref="ClientMessages"/> holds each client's messages.
/// </summary>
internal sealed record EchoRound(
    TimeSpan Elapsed,
    long Messages,
    long Errors,
    long Lost,
    long AllocatedBytes,
    long ClientAllocatedBytes,
    long ChildAllocatedBytes,
    long? ServerAllocatedBytes,
    LatencyHistogram Latency,
    IReadOnlyList<long> ClientMessages)
{
    public double MsgsPerSec => Messages / Math.Max(Elapsed.TotalSeconds, 1e-9);
}
