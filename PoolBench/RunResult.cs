namespace PoolBench;

/// <summary>One timed run of a cell: how long it took, how many bytes it allocated, how many operations it did.</summary>
internal readonly record struct RunResult(TimeSpan Elapsed, long AllocatedBytes, long Operations);
