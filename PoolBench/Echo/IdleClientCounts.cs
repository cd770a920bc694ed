namespace PoolBench.Echo;

/// <summary>What the idle clients report at the end: connections opened, echoed in full, and failed in any way.</summary>
internal readonly record struct IdleClientCounts(int Connected, int Echoed, long Errors);
