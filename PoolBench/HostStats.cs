namespace PoolBench;

/// <summary>
/// One printout of our console host's stats, as a child server process prints it on SIGUSR1 or SIGUSR2.
/// </summary>
/// <param name="AllocatedBytes">What the process has allocated since it started, less what its earlier printouts allocated.</param>
/// <param name="HeapBytes">The managed heap: after a full collection on SIGUSR2, as it stands on SIGUSR1.</param>
/// <param name="CommittedBytes">The memory the GC has committed.</param>
internal readonly record struct HostStats(long AllocatedBytes, long HeapBytes, long CommittedBytes);
