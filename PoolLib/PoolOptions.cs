namespace PoolLib;

/// <summary>How a <see cref="Pool{T}"/> is sized, named, trimmed and watched.</summary>
/// <remarks>
/// A pool reads its options once, in its constructor, and rejects bad values there with the option's
/// name; changing the options afterwards does not change the pool. Every feature but the cap is off
/// by default, and then costs a take or a release nothing.
/// </remarks>
public sealed class PoolOptions
{
    /// <summary>Gets or sets the cap on objects alive at once, idle and rented together; at least 1. Required.</summary>
    public int MaxCapacity { get; set; }

    /// <summary>
    /// Gets or sets the pool's name, as its metrics and leak reports show it; <see langword="null"/>
    /// for the pool type's name.
    /// </summary>
    public string? Name { get; set; }

    /// <summary>
    /// Gets or sets how long an object may stay idle before a background timer disposes it, down to
    /// <see cref="MinIdle"/> idle objects; <see langword="null"/> (the default) to keep idle objects.
    /// </summary>
    public TimeSpan? IdleTimeout { get; set; }

    /// <summary>
    /// Gets or sets how many idle objects <see cref="Pool{T}.Trim"/> and the idle timer keep; from 0
    /// (the default) to <see cref="MaxCapacity"/>.
    /// </summary>
    public int MinIdle { get; set; }

    /// <summary>
    /// Gets or sets how long an object may live: one older than this is disposed when it is released
    /// instead of stored, or by a background timer if it is idle; <see langword="null"/> (the default) for no limit.
    /// </summary>
    /// <remarks>
    /// The timer checks ages every quarter of the shortest of this, <see cref="IdleTimeout"/> and
    /// <see cref="LeakDetectionThreshold"/>, so an object may outlive this by up to that much; a
    /// release itself reads no clock.
    /// </remarks>
    public TimeSpan? MaxObjectLifetime { get; set; }

    /// <summary>
    /// Gets or sets how long a rental may last before <see cref="Pool{T}.RentalLeakSuspected"/> is
    /// raised for it; <see langword="null"/> (the default) to turn leak detection off.
    /// </summary>
    /// <remarks>While it is on, every take captures its stack trace, which costs microseconds.</remarks>
    public TimeSpan? LeakDetectionThreshold { get; set; }

    /// <summary>
    /// Gets or sets the clock and timers the pool uses for idle time, object lifetime and leak
    /// detection; <see langword="null"/> (the default) for <see cref="TimeProvider.System"/>.
    /// </summary>
    public TimeProvider? TimeProvider { get; set; }
}
