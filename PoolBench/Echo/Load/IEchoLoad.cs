using System.Net;

namespace PoolBench.Echo.Load;

/// <summary>
/// One client of the echo load: a share of a cell's connections (or UDP senders), run in this process
/// (<see cref="EchoLoad"/>) or in a child process of its own (<see cref="EchoLoadProcess"/>). The scenario
/// moves every client of a round through the same steps: start, measure, drain, finish.
/// </summary>
internal interface IEchoLoad : IAsyncDisposable
{
    /// <summary>True when the clients run in this process, so that this process's allocations include theirs.</summary>
    bool InProcess { get; }

    /// <summary>Connects <paramref name="connections"/> clients of <paramref name="cell"/> and starts their warm-up.</summary>
    Task StartAsync(EchoCell cell, int connections, EndPoint server);

    /// <summary>Starts counting echoes, latencies and allocations.</summary>
    void Measure();

    /// <summary>Stops counting and sending; the clients collect the echoes still in flight.</summary>
    void Drain();

    /// <summary>Waits until every echo in flight has come back (or the drain's time limit), closes the clients and tells what they saw.</summary>
    Task<EchoLoadResult> FinishAsync();
}
