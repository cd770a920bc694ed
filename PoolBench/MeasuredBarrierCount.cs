using System.Diagnostics.Tracing;
using System.Globalization;
using BenchmarkDotNet.Engines;
using PoolLib.Internal;

namespace PoolBench;

/// <summary>
/// Counts, in the process that runs a benchmark case, the process-wide memory barriers our pool
/// library ran during the case's measured iterations, and the pairs those iterations did. It
/// listens to BenchmarkDotNet's engine events, which the engine raises outside the timed window
/// of every iteration: the pilot, warm-up and extra-statistics iterations are not counted, as
/// filling the pool and disposing it are not. At the end of the case, <see cref="Record"/> appends
/// the totals to the file that <see cref="ProcessWideBarrierDiagnoser"/> reads in the host process
/// (named by <see cref="LogVariable"/>, which the host sets and its benchmark processes inherit).
/// </summary>
internal sealed class MeasuredBarrierCount : EventListener
{
    /// <summary>The environment variable that names the file of counts.</summary>
    public const string LogVariable = "POOLBENCH_BARRIER_LOG";

    private static readonly Lazy<MeasuredBarrierCount> s_instance = new(() => new MeasuredBarrierCount());

    // Written only by the engine's thread, from its iteration events and the case's setup and clean-up.
    private long _barriersAtIterationStart;
    private long _barriers;
    private long _pairs;

    /// <summary>Starts counting for a new case (the listener itself is made once per process).</summary>
    public static void Start()
    {
        MeasuredBarrierCount count = s_instance.Value;
        count._barriers = 0;
        count._pairs = 0;
    }

    /// <summary>Appends the case's totals under <paramref name="key"/>; nothing when no host asked for them.</summary>
    public static void Record(string key)
    {
        MeasuredBarrierCount count = s_instance.Value;
        if (Environment.GetEnvironmentVariable(LogVariable) is { Length: > 0 } path)
        {
            File.AppendAllText(path, string.Create(CultureInfo.InvariantCulture, $"{key}\t{count._barriers}\t{count._pairs}\n"));
        }
    }

    protected override void OnEventSourceCreated(EventSource eventSource)
    {
        if (eventSource.Name == EngineEventSource.SourceName)
        {
            EnableEvents(eventSource, EventLevel.Informational);
        }
    }

    protected override void OnEventWritten(EventWrittenEventArgs eventData)
    {
        switch (eventData.EventId)
        {
            case EngineEventSource.WorkloadActualStartEventId:
                _barriersAtIterationStart = ForeignAccessGate.ProcessWideBarriers;
                break;
            case EngineEventSource.WorkloadActualStopEventId:
                _barriers += ForeignAccessGate.ProcessWideBarriers - _barriersAtIterationStart;
                _pairs += eventData.Payload is [long pairs] ? pairs : 0;
                break;
        }
    }
}
