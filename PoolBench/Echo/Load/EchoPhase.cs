namespace PoolBench.Echo.Load;

/// <summary>Where an echo cell is: clients count and time only what completes while measuring.</summary>
internal enum EchoPhase
{
    /// <summary>Connections run but nothing is counted.</summary>
    WarmUp,

    /// <summary>Echoes, latencies and the client's own allocations are counted.</summary>
    Measure,

    /// <summary>No new messages are sent; clients wait for the echoes still in flight, then stop.</summary>
    Drain,
}
