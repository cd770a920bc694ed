namespace PoolBench;

/// <summary>
/// One timed run of a cell: how long it took, how many bytes it allocated, how many operations it
/// did, and how many process-wide memory barriers our pool library ran meanwhile (null where the
/// run does not count them).
/// </summary>
internal readonly record struct RunResult(TimeSpan Elapsed, long AllocatedBytes, long Operations, long? ProcessWideBarriers = null);
