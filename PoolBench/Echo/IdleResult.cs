namespace PoolBench.Echo;

/// <summary>
/// The idle-connections check of one server, as written to JSON. The heap figures are this
/// process's managed heap after a full collection, so they are the server's only when it runs in
/// this process (null otherwise).
/// </summary>
internal sealed record IdleResult(
    string Server,
    int Connections,
    int Connected,
    int Echoed,
    long Errors,
    double? HeapMib,
    double? HeapDeltaMib,
    double? HeapCommittedMib,
    double? ServerProcessMib,
    double HoldSeconds)
{
    public string Scenario => "echo-idle";
}
