namespace PoolBench.Connections;

/// <summary>
/// One pool's connect storm, as written to JSON: <see cref="Takers"/> takers at once against a listener that drains its
/// small backlog slowly, with the pool capped at <see cref="MaxConnections"/> and, for ours, its
/// <see cref="MaxConcurrentCreations"/>: the takers served and failed, the connections the listener accepted, the
/// thread pool's threads when the storm began and at its most, and the seconds until the last taker was served.
/// </summary>
internal sealed record ConnectStormResult(
    string Peer,
    int Takers,
    int MaxConnections,
    int? MaxConcurrentCreations,
    int Backlog,
    int Served,
    int Failed,
    int Connects,
    int ThreadsAtStart,
    int ThreadsPeak,
    double Seconds)
{
    public string Scenario => "connections-storm";

    public int ThreadsAdded => ThreadsPeak - ThreadsAtStart;
}
