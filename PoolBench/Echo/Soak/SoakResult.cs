namespace PoolBench.Echo.Soak;

/// <summary>
/// One server's soak, as written to JSON: what the mixed clients did and how the server's process memory moved.
/// Memory figures are null where they cannot be read (resident memory of a server without a child process; the
/// GC's figures of a server that is not our host).
/// </summary>
internal sealed record SoakResult(
    string Server,
    int Clients,
    double Seconds,
    long Connections,
    long Messages,
    double MsgsPerSec,
    double ConnectionsPerSec,
    long Errors,
    long Lost,
    double? ServerCpuSeconds,
    double? RssStartMib,
    double? RssPlateauMib,
    double? RssEndMib,
    double? RssMaxMib,
    double? CommittedEndMib,
    double? LiveHeapMib,
    long? Gen0Collections,
    long? Gen1Collections,
    long? Gen2Collections,
    IReadOnlyList<double> RssMib)
{
    public string Scenario => "soak";
}
