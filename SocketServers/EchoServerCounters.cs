namespace SocketServers;

/// <summary>A snapshot of an echo server's counters, read with <see cref="EchoServer.Counters"/>.</summary>
/// <remarks>Each value is read atomically; the snapshot as a whole is not taken at one instant.</remarks>
/// <param name="CurrentConnections">TCP connections open now (always 0 for UDP).</param>
/// <param name="PeakConnections">The most TCP connections that were open at once.</param>
/// <param name="TotalConnections">TCP connections accepted since start.</param>
/// <param name="MessagesEchoed">TCP receives or UDP datagrams echoed in full.</param>
/// <param name="BytesEchoed">Bytes sent back: handed to the kernel to send, counted as each send completes.</param>
/// <param name="Drops">TCP: connections that ended other than by the client's graceful close (reset,
/// error, idle timeout, eviction, a failed set-up, closed at the end of the stop grace period). UDP: datagrams not echoed
/// (oversized, from a source port below 1024 unless allowed, failed reply, or still waiting when the server stopped).</param>
/// <param name="PoolTotalCount">Args the server's pool has created and not discarded.</param>
/// <param name="PoolAvailableCount">Args in the server's pool right now; equal to
/// <paramref name="PoolTotalCount"/> when the server is idle or stopped.</param>
/// <param name="Rejected">TCP clients accepted and closed at once: over the per-address limit, or
/// over the connection limit when the server rejects rather than queues them.</param>
/// <param name="Evicted">TCP connections closed, while the server was full and a client waited,
/// because they moved less data than the minimum rate (also counted in <paramref name="Drops"/>).</param>
public readonly record struct EchoServerCounters(
    int CurrentConnections,
    int PeakConnections,
    long TotalConnections,
    long MessagesEchoed,
    long BytesEchoed,
    long Drops,
    int PoolTotalCount,
    int PoolAvailableCount,
    long Rejected,
    long Evicted);
