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
/// never disposed can still be collected; a disposed pool stops being observed. The instruments are
/// published with the first pool, and, if a listener threw from <see cref="MeterListener.InstrumentPublished"/>,
/// again with the next (<see cref="MeterInstruments{TInstruments}"/>): a failing listener costs measurements
/// until then, never a pool.
/// </remarks>
internal static class PoolMetrics
{
    public const string MeterName = "PoolLib";

    private const string PoolNameTag = "pool.name";

    private static readonly WeakRegistry<IObservedPool> s_pools = new();

    private static readonly MeterInstruments<Instruments> s_instruments = new(MeterName, static meter => new Instruments(meter));

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
    public static bool UseTimeEnabled => s_instruments.Current?.UseTime.Enabled == true;

    /// <summary>Gets whether a listener takes <c>pool.create_time</c>.</summary>
    public static bool CreateTimeEnabled => s_instruments.Current?.CreateTime.Enabled == true;

    /// <summary>Observes <paramref name="pool"/> until it is disposed or collected, publishing the instruments unless they are.</summary>
    public static void Track(IObservedPool pool)
    {
        s_pools.Add(pool);
        s_instruments.EnsurePublished();
    }

    /// <summary>Stops observing <paramref name="pool"/>.</summary>
    public static void Untrack(IObservedPool pool) => s_pools.Remove(pool);

    // A listener's callback runs inside Add and Record, in the middle of a take, release or discard:
    // an exception from it is dropped there, so that a failing observer never costs an object or a
    // unit of the cap.

    public static void Created(string poolName) => Add(s_instruments.Current?.Created, poolName);

    public static void CreateFailed(string poolName, bool timedOut)
    {
        try
        {
            s_instruments.Current?.CreateFailures.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName), new KeyValuePair<string, object?>("reason", timedOut ? "timed_out" : "failed"));
        }
        catch (Exception)
        {
        }
    }

    public static void Discarded(string poolName, DiscardReason reason)
    {
        try
        {
            s_instruments.Current?.Discarded.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName), new KeyValuePair<string, object?>("reason", TagValue(reason)));
        }
        catch (Exception)
        {
        }
    }

    public static void TimedOut(string poolName) => Add(s_instruments.Current?.Timeouts, poolName);

    /// <summary>Records a wait that began at <paramref name="startTimestamp"/> (<see cref="System.Diagnostics.Stopwatch"/>) and ended now.</summary>
    public static void Waited(string poolName, long startTimestamp)
    {
        if (s_instruments.Current?.WaitTime is { Enabled: true } waitTime)
        {
            Record(waitTime, poolName, System.Diagnostics.Stopwatch.GetElapsedTime(startTimestamp));
        }
    }

    public static void Used(string poolName, TimeSpan time) => Record(s_instruments.Current?.UseTime, poolName, time);

    public static void Constructed(string poolName, TimeSpan time) => Record(s_instruments.Current?.CreateTime, poolName, time);

    public static void LeakReported(string poolName) => Add(s_instruments.Current?.Leaks, poolName);

    public static void LeakReturned(string poolName) => Add(s_instruments.Current?.LeaksReturned, poolName);

    public static void ReleasedLate(string poolName) => Add(s_instruments.Current?.LateReleases, poolName);

    private static void Add(Counter<long>? counter, string poolName)
    {
        try
        {
            counter?.Add(1, new KeyValuePair<string, object?>(PoolNameTag, poolName));
        }
        catch (Exception)
        {
        }
    }

    private static void Record(Histogram<double>? histogram, string poolName, TimeSpan time)
    {
        try
        {
            histogram?.Record(time.TotalSeconds, new KeyValuePair<string, object?>(PoolNameTag, poolName));
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

    /// <summary>The instruments, made in one publication on the meter they are given.</summary>
    private sealed class Instruments
    {
        public Instruments(Meter meter)
        {
            Created = meter.CreateCounter<long>("pool.objects.created", "{object}", "Objects the pool has created.");
            CreateFailures = meter.CreateCounter<long>("pool.objects.create_failures", "{creation}", "Background creations that failed, by reason: failed or timed_out.");
            Discarded = meter.CreateCounter<long>("pool.objects.discarded", "{object}", "Objects the pool has disposed of, by reason.");
            Timeouts = meter.CreateCounter<long>("pool.take.timeouts", "{take}", "Waits for an object that timed out or were cancelled.");
            WaitTime = meter.CreateHistogram<double>("pool.take.wait_time", "s", "How long the takes that had to wait waited.");
            UseTime = meter.CreateHistogram<double>("pool.use_time", "s", "How long objects were rented, from take to release.");
            CreateTime = meter.CreateHistogram<double>("pool.create_time", "s", "How long making an object took.");
            Leaks = meter.CreateCounter<long>("pool.leaks.reported", "{rental}", "Rentals held past the leak detection threshold.");
            LeaksReturned = meter.CreateCounter<long>("pool.leaks.returned", "{rental}", "Rentals reported as leaks that came back.");
            LateReleases = meter.CreateCounter<long>("pool.abandoned.late_releases", "{release}", "Releases of rentals the pool had already taken back as abandoned.");
            meter.CreateObservableUpDownCounter("pool.objects", ObserveObjects, "{object}", "Objects in the pool, idle and used.");
            meter.CreateObservableUpDownCounter("pool.objects.max", ObserveMax, "{object}", "The pool's cap on objects alive at once.");
            meter.CreateObservableUpDownCounter("pool.takers.waiting", ObserveWaiting, "{taker}", "Takers waiting for an object.");
        }

        public Counter<long> Created { get; }

        public Counter<long> CreateFailures { get; }

        public Counter<long> Discarded { get; }

        public Counter<long> Timeouts { get; }

        public Histogram<double> WaitTime { get; }

        public Histogram<double> UseTime { get; }

        public Histogram<double> CreateTime { get; }

        public Counter<long> Leaks { get; }

        public Counter<long> LeaksReturned { get; }

        public Counter<long> LateReleases { get; }
    }

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
