namespace PoolBench;

/// <summary>The idle-connections check of one server, as written to JSON.</summary>
internal sealed record IdleResult(
    string Server,
    int Connections,
    int Connected,
    int Echoed,
    long Errors,
    double HeapMib,
    double HeapDeltaMib,
    double? ServerProcessMib,
    double HoldSeconds)
{
    public string Scenario => "echo-idle";
}
