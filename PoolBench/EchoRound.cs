namespace PoolBench;

/// <summary>
/// What one server did in one round of an echo cell, before the rounds are reduced to an
/// <see cref="EchoResult"/>. <see cref="AllocatedBytes"/> is this process's allocation over the
/// measured window; <see cref="ClientAllocatedBytes"/> is the part the clients counted themselves;
/// <see cref="ServerAllocatedBytes"/> is what a server in its own process allocated over a window
/// that encloses the measured one, where it tells.
/// </summary>
internal sealed record EchoRound(
    TimeSpan Elapsed,
    long Messages,
    long Errors,
    long Lost,
    long AllocatedBytes,
    long ClientAllocatedBytes,
    long? ServerAllocatedBytes,
    LatencyHistogram Latency)
{
    public double MsgsPerSec => Messages / Math.Max(Elapsed.TotalSeconds, 1e-9);
}
