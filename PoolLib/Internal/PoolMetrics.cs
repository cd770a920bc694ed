using System.Diagnostics.Metrics;

namespace PoolLib.Internal;

/// <summary>
/// The library's one <see cref="Meter"/>, named <c>PoolLib</c>, and its instruments; every
/// measurement carries the pool's name as <c>pool.name</c>.
/// </summary>
/// <remarks>
/// Gauges are observable: they read each live pool's counts when a listener collects. Counters and the
/// wait and create histograms are recorded on slow paths only; a take and a release read the clock for
/// the use-time histogram only while a listener has it on. Pools are held weakly, so a pool that is
/// never disposed can still be collected; a disposed pool stops being observed.
/// </remarks>
internal static class PoolMetrics
{
    public const string MeterName = "PoolLib";

    private const string PoolNameTag = "pool.name";

    private static readonly Meter s_meter = new(MeterName);
    private static readonly WeakRegistry<IObservedPool> s_pools = new();

    private static readonly Counter<long> s_created = s_meter.CreateCounter<long>(
        "pool.objects.created", "{object}", "Objects the pool has created.");

    private static readonly Counter<long> s_createFailures = s_meter.CreateCounter<long>(
        "pool.objects.create_failures", "{creation}", "Background creations that failed, by reason: failed or timed_out.");

    private static readonly Counter<long> s_discarded = s_meter.CreateCounter<long>(
        "pool.objects.discarded", "{object}", "Objects the pool has disposed of, by reason.");

    private static readonly Counter<long> s_timeouts = s_meter.CreateCounter<long>(
        "pool.take.timeouts", "{take}", "Waits for an object that timed out or were cancelled.");

    private static readonly Histogram<double> s_waitTime = s_meter.CreateHistogram<double>(
        "pool.take.wait_time", "s", "How long the takes that had to wait waited.");

    private static readonly Histogram<double> s_useTime = s_meter.CreateHistogram<double>(
        "pool.use_time", "s", "How long objects were rented, from take to release.");

    private static readonly Histogram<double> s_createTime = s_meter.CreateHistogram<double>(
        "pool.create_time", "s", "How long making an object took.");

    private static readonly Counter<long> s_leaks = s_meter.CreateCounter<long>(
        "pool.leaks.reported", "{rental}", "Rentals held past the leak detection threshold.");

    private static readonly Counter<long> s_leaksReturned = s_meter.CreateCounter<long>(
        "pool.leaks.returned", "{rental}", "Rentals reported as leaks that came back.");

    private static readonly Counter<long> s_lateReleases = s_meter.CreateCounter<long>(
        "pool.abandoned.late_releases", "{release}", "Releases of rentals the pool had already taken back as abandoned.");

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

        /// <summary><c>abandoned</c>: its rental outlived the pool's abandoned-rental timeout and was taken back.</summary>
        Abandoned,

        /// <summary><c>reset_failed</c>: its <see cref="Microsoft.Extensions.ObjectPool.IResettable.TryReset"/> returned false.</summary>
        ResetFailed,
    }

    /// <summary>Gets whether a listener takes <c>pool.use_time</c>: only then do takes and releases read the clock for it.</summary>
    public static bool UseTimeEnabled => s_useTime.Enabled;

    /// <summary>Gets whether a listener takes <c>pool.create_time</c>.</summary>
    public static bool CreateTimeEnabled => s_createTime.Enabled;

    /// <summary>Observes <paramref name="pool"/> until it is disposed or collected.</summary>
    public static void Track(IObservedPool pool) => s_pools.Add(pool);

    /// <summary>Stops observing <paramref name="pool"/>.</summary>
    public static void Untrack(IObservedPool pool) => s_pools.Remove(pool);

    // A listener's callback runs inside Add and Record, in the middle of a take, release or discard:
    // an exception from it is dropped there, so that a failing observer never costs an object or a
    // place under the cap.

    public static void Created(string poolName) => Add(s_created, poolName);

    public static void CreateFailed(string poolName, bool timedOut)
    {
        try
        {
            s_createFailures.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName), new KeyValuePair<string, object?>("reason", timedOut ? "timed_out" : "failed"));
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

    public static void TimedOut(string poolName) => Add(s_timeouts, poolName);

    /// <summary>Records a wait that began at <paramref name="startTimestamp"/> (<see cref="System.Diagnostics.Stopwatch"/>) and ended now.</summary>
    public static void Waited(string poolName, long startTimestamp)
    {
        if (s_waitTime.Enabled)
        {
            Record(s_waitTime, poolName, System.Diagnostics.Stopwatch.GetElapsedTime(startTimestamp));
        }
    }

    public static void Used(string poolName, TimeSpan time) => Record(s_useTime, poolName, time);

    public static void Constructed(string poolName, TimeSpan time) => Record(s_createTime, poolName, time);

    public static void LeakReported(string poolName) => Add(s_leaks, poolName);

    public static void LeakReturned(string poolName) => Add(s_leaksReturned, poolName);

    public static void ReleasedLate(string poolName) => Add(s_lateReleases, poolName);

    private static void Add(Counter<long> counter, string poolName)
    {
        try
        {
            counter.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName));
        }
        catch (Exception)
        {
        }
    }

    private static void Record(Histogram<double> histogram, string poolName, TimeSpan time)
    {
        try
        {
            histogram.Record(time.TotalSeconds, new KeyValuePair<string, object?>(PoolNameTag, poolName));
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
        DiscardReason.Abandoned => "abandoned",
        DiscardReason.ResetFailed => "reset_failed",
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
