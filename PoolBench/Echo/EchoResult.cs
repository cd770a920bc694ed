namespace PoolBench.Echo;

/// <summary>
/// One server in one cell of the echo load, as written to JSON: messages/s is the median of its
/// rounds, with the slowest and fastest round; latency, losses, errors and allocation are over all
/// rounds together. Per-message allocations are null where not measurable. <see cref="ClientShares"/>
/// gives each client's part of <see cref="Messages"/>, in the order the clients were started.
/// </summary>
internal sealed record EchoResult(
    string Server,
    string Protocol,
    int Connections,
    int Size,
    int Pipeline,
    double Seconds,
    long Messages,
    double MsgsPerSec,
    double MsgsPerSecMin,
    double MsgsPerSecMax,
    int Rounds,
    double MibPerSec,
    double? P50Us,
    double? P99Us,
    double? P999Us,
    long Errors,
    long Lost,
    double? ServerBytesPerMsg,
    double? ClientBytesPerMsg,
    double? RatioVsOurs,
    int Clients,
    IReadOnlyList<double> ClientShares)
{
    public string Scenario => "echo";
}
