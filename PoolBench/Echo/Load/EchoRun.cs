namespace PoolBench.Echo.Load;

/// <summary>
/// The phase shared by all clients of one echo cell; only the load moves it forward, from the warm-up to measuring
/// to draining. Clients count and time only what completes while measuring.
/// </summary>
internal sealed class EchoRun
{
    // Written by the load, read by every client once per message: always through Volatile.
    private int _phase = (int)Phase.WarmUp;

    private enum Phase
    {
        /// <summary>Connections run but nothing is counted.</summary>
        WarmUp,

        Measure,
        Drain,
    }

    /// <summary>Echoes, latencies and the clients' own allocations are counted.</summary>
    public bool Measuring => Current == Phase.Measure;

    /// <summary>No new messages are sent; clients wait for the echoes still in flight, then stop.</summary>
    public bool Draining => Current == Phase.Drain;

    private Phase Current => (Phase)Volatile.Read(ref _phase);

    public void Measure() => Volatile.Write(ref _phase, (int)Phase.Measure);

    public void Drain() => Volatile.Write(ref _phase, (int)Phase.Drain);
}
