namespace PoolBench.Size;

/// <summary>
/// One cell of the <c>size</c> scenario, as written to JSON: ns per take (or per pair) of one
/// implementation at one size, with the collector's pauses per take where objects are made, or, for
/// the timed take, how long it waited. Null where it does not apply.
/// </summary>
internal sealed record SizeResult(string Case, string Impl, int Objects, double? NsPerOp, double? GcNsPerOp, double? WaitMsMedian, double? WaitMsMax)
{
    public string Scenario => "size";
}
