namespace SocketServers;

/// <summary>A snapshot of a server's counters, read with <see cref="SocketServer.Counters"/>: each value is read
/// atomically; the snapshot as a whole is not taken at one instant.</summary>
/// <param name="CurrentConnections">TCP connections open now (0 for UDP).</param>
/// <param name="PeakConnections">The most TCP connections open at once.</param>
/// <param name="TotalConnections">TCP connections accepted.</param>
/// <param name="MessagesHandled">TCP receives the handler has handled (its call returned without throwing); UDP
/// datagrams the handler answered (or chose not to) with the reply sent.</param>
/// <param name="BytesSent">Bytes sent back, counted as each send completes.</param>
/// <param name="Drops">TCP connections that ended other than by the client's graceful close; UDP datagrams not
/// answered (SocketServers/README.md lists the causes).</param>
/// <param name="PoolTotalCount">Args the pool has created and not discarded.</param>
/// <param name="PoolAvailableCount">Args in the pool now; all of them when the server is stopped, and when it is idle but for the one a TCP server holds for its next accept (unless it rejects when full).</param>
/// <param name="Rejected">TCP clients closed at once, over a limit.</param>
/// <param name="Evicted">TCP connections evicted as slow for a waiting client (also Drops).</param>
public readonly record struct SocketServerCounters(
    int CurrentConnections,
    int PeakConnections,
    long TotalConnections,
    long MessagesHandled,
    long BytesSent,
    long Drops,
    int PoolTotalCount,
    int PoolAvailableCount,
    long Rejected,
    long Evicted);
