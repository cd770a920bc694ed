namespace PoolBench;

/// <summary>One cell of the echo load, as written to JSON; per-message allocations are null where not measurable.</summary>
internal sealed record EchoResult(
    string Server,
    string Protocol,
    int Connections,
    int Size,
    int Pipeline,
    double Seconds,
    long Messages,
    double MsgsPerSec,
    double MibPerSec,
    double? P50Us,
    double? P99Us,
    double? P999Us,
    long Errors,
    long Lost,
    double? ServerBytesPerMsg,
    double? ClientBytesPerMsg,
    double? RatioVsOurs)
{
    public string Scenario => "echo";
}
