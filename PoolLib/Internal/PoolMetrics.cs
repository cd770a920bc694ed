using System.Diagnostics.Metrics;

namespace PoolLib.Internal;

/// <summary>
/// The library's one <see cref="Meter"/>, named <c>PoolLib</c>, and its instruments; every
/// measurement carries the pool's name as <c>pool.name</c>.
/// </summary>
/// <remarks>
/// Gauges are observable: they read each live pool's counts when a listener collects, so a take or
/// release records nothing. Counters and the wait-time histogram are recorded on slow paths only
/// (creating, discarding, waiting). Pools are held weakly, so a pool that is never disposed can
/// still be collected; a disposed pool stops being observed.
/// </remarks>
internal static class PoolMetrics
{
    public const string MeterName = "PoolLib";

    private const string PoolNameTag = "pool.name";

    private static readonly Meter s_meter = new(MeterName);
    private static readonly WeakRegistry<IObservedPool> s_pools = new();

    private static readonly Counter<long> s_created = s_meter.CreateCounter<long>(
        "pool.objects.created", "{object}", "Objects the pool has created.");

    private static readonly Counter<long> s_discarded = s_meter.CreateCounter<long>(
        "pool.objects.discarded", "{object}", "Objects the pool has disposed of, by reason.");

    private static readonly Counter<long> s_timeouts = s_meter.CreateCounter<long>(
        "pool.take.timeouts", "{take}", "Waits for an object that timed out or were cancelled.");

    private static readonly Histogram<double> s_waitTime = s_meter.CreateHistogram<double>(
        "pool.take.wait_time", "s", "How long the takes that had to wait waited.");

    static PoolMetrics()
    {
        s_meter.CreateObservableUpDownCounter("pool.objects", ObserveObjects, "{object}", "Objects in the pool, idle and used.");
        s_meter.CreateObservableUpDownCounter("pool.objects.max", ObserveMax, "{object}", "The pool's cap on objects alive at once.");
        s_meter.CreateObservableUpDownCounter("pool.takers.waiting", ObserveWaiting, "{taker}", "Takers waiting for an object.");
    }

    /// <summary>Why a pool disposed of an object, as the <c>reason</c> tag says it.</summary>
    public enum DiscardReason
    {
        /// <summary><c>cleanup_failed</c>: <see cref="Pool{T}.CleanUp"/> threw.</summary>
        CleanUpFailed,

        /// <summary><c>discarded</c>: its renter called <see cref="PoolSlot{T}.Discard"/>.</summary>
        Discarded,

        /// <summary><c>invalid</c>: it failed the pool's validation on take.</summary>
        Invalid,

        /// <summary><c>expired</c>: it outlived the pool's object lifetime, or came back after a clear.</summary>
        Expired,

        /// <summary><c>trimmed</c>: it was idle when the pool was trimmed or cleared.</summary>
        Trimmed,

        /// <summary><c>disposed</c>: the pool was disposed.</summary>
        Disposed,
    }

    /// <summary>Observes <paramref name="pool"/> until it is disposed or collected.</summary>
    public static void Track(IObservedPool pool) => s_pools.Add(pool);

    /// <summary>Stops observing <paramref name="pool"/>.</summary>
    public static void Untrack(IObservedPool pool) => s_pools.Remove(pool);

    // A listener's callback runs inside Add and Record, in the middle of a take, release or discard:
    // an exception from it is dropped there, so that a failing observer never costs an object or a
    // place under the cap.

    public static void Created(string poolName)
    {
        try
        {
            s_created.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName));
        }
        catch (Exception)
        {
        }
    }

    public static void Discarded(string poolName, DiscardReason reason)
    {
        try
        {
            s_discarded.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName), new KeyValuePair<string, object?>("reason", TagValue(reason)));
        }
        catch (Exception)
        {
        }
    }

    public static void TimedOut(string poolName)
    {
        try
        {
            s_timeouts.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName));
        }
        catch (Exception)
        {
        }
    }

    /// <summary>Records a wait that began at <paramref name="startTimestamp"/> (<see cref="System.Diagnostics.Stopwatch"/>) and ended now.</summary>
    public static void Waited(string poolName, long startTimestamp)
    {
        if (!s_waitTime.Enabled)
        {
            return;
        }

        try
        {
            s_waitTime.Record(System.Diagnostics.Stopwatch.GetElapsedTime(startTimestamp).TotalSeconds, new KeyValuePair<string, object?>(PoolNameTag, poolName));
        }
        catch (Exception)
        {
        }
    }

    private static string TagValue(DiscardReason reason) => reason switch
    {
        DiscardReason.CleanUpFailed => "cleanup_failed",
        DiscardReason.Discarded => "discarded",
        DiscardReason.Invalid => "invalid",
        DiscardReason.Expired => "expired",
        DiscardReason.Trimmed => "trimmed",
        _ => "disposed",
    };

    private static IEnumerable<Measurement<long>> ObserveObjects()
    {
        foreach (IObservedPool pool in LivePools())
        {
            int total = pool.TotalCount;
            int idle = Math.Min(pool.AvailableCount, total);
            yield return new Measurement<long>(idle, new KeyValuePair<string, object?>(PoolNameTag, pool.Name), new KeyValuePair<string, object?>("pool.object.state", "idle"));
            yield return new Measurement<long>(total - idle, new KeyValuePair<string, object?>(PoolNameTag, pool.Name), new KeyValuePair<string, object?>("pool.object.state", "used"));
        }
    }

    private static IEnumerable<Measurement<long>> ObserveMax()
    {
        foreach (IObservedPool pool in LivePools())
        {
            yield return new Measurement<long>(pool.MaxCapacity, new KeyValuePair<string, object?>(PoolNameTag, pool.Name));
        }
    }

    private static IEnumerable<Measurement<long>> ObserveWaiting()
    {
        foreach (IObservedPool pool in LivePools())
        {
            yield return new Measurement<long>(pool.WaiterCount, new KeyValuePair<string, object?>(PoolNameTag, pool.Name));
        }
    }

    private static List<IObservedPool> LivePools() => s_pools.Live();

    /// <summary>What the observable instruments read from a pool.</summary>
    public interface IObservedPool
    {
        string Name { get; }

        int MaxCapacity { get; }

        int TotalCount { get; }

        int AvailableCount { get; }

        int WaiterCount { get; }
    }
}
