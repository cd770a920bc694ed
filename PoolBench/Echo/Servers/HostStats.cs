namespace PoolBench.Echo.Servers;

/// <summary>
/// One printout of our console host's stats, as a child server process prints it on SIGUSR1 or SIGUSR2.
/// </summary>
/// <param name="AllocatedBytes">What the process has allocated since it started, less what its earlier printouts allocated.</param>
/// <param name="HeapBytes">The managed heap: after a full collection on SIGUSR2, as it stands on SIGUSR1.</param>
/// <param name="CommittedBytes">The memory the GC had committed at its last collection.</param>
/// <param name="Gen0Collections">Collections of generation 0 so far (each collection of an older generation counts here too).</param>
/// <param name="Gen1Collections">Collections of generation 1 so far.</param>
/// <param name="Gen2Collections">Full collections so far.</param>
internal readonly record struct HostStats(
    long AllocatedBytes, long HeapBytes, long CommittedBytes, long Gen0Collections, long Gen1Collections, long Gen2Collections);
