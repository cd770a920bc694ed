using Microsoft.Extensions.Configuration;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>How a <see cref="Pool{T}"/> is sized, named, trimmed and watched.</summary>
/// <remarks>
/// A pool reads its options once, in its constructor, and rejects bad values there with the option's
/// name; changing the options afterwards does not change the pool. Every feature but the cap is off
/// by default, and then costs a take or a release nothing.
/// </remarks>
public sealed class PoolOptions
{
    /// <summary>The default of <see cref="MaxConcurrentCreations"/>.</summary>
    public const int DefaultMaxConcurrentCreations = 8;

    /// <summary>The default of <see cref="CreateTimeout"/>: 30 seconds.</summary>
    public static readonly TimeSpan DefaultCreateTimeout = TimeSpan.FromSeconds(30);

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
    /// The timer checks ages every quarter of the shortest of the pool's time spans, and at least sixteen times within
    /// this (its period). Each object's own lifetime is this less one period, less a random part of up to a quarter of
    /// this: objects made together expire over four ticks or more instead of at one, and none is retired after this has
    /// passed. A release itself reads no clock.
    /// </remarks>
    public TimeSpan? MaxObjectLifetime { get; set; }

    /// <summary>
    /// Gets or sets how long a rental may last before <see cref="Pool{T}.RentalLeakSuspected"/> is
    /// raised for it; <see langword="null"/> (the default) to turn leak detection off.
    /// </summary>
    /// <remarks>
    /// Every rental held longer is reported, whether or not it was sampled (see <see cref="LeakSamplingInterval"/>).
    /// A take reads no clock for it: the background timer notes when it first sees each rental.
    /// </remarks>
    public TimeSpan? LeakDetectionThreshold { get; set; }

    /// <summary>
    /// Gets or sets how many rentals share one record of where it was taken, while leak detection is
    /// on: one rental in this many (on each thread) captures its stack trace. 1 traces every rental,
    /// 0 none; <see langword="null"/> (the default) adapts to how often each thread takes.
    /// </summary>
    /// <remarks>
    /// A trace costs microseconds and allocates. By default a thread's takes are all traced while they
    /// are rare, and fewer as they grow frequent, so that tracing takes about 1 % of the thread's time;
    /// the pool's <see cref="TimeProvider"/> is read only when a trace is taken, to measure that. A thread
    /// that goes quiet after a burst traces again within the number of takes the burst set. A reported
    /// rental that was not sampled has no <see cref="PoolLeakEventArgs.StackTrace"/>.
    /// </remarks>
    public int? LeakSamplingInterval { get; set; }

    /// <summary>
    /// Gets or sets how long a rental may last before the pool takes it back: its object is discarded
    /// (never handed out again, since its renter may still use it) and its place under the cap goes
    /// to the next taker; <see langword="null"/> (the default) to leave rentals alone.
    /// </summary>
    /// <remarks>
    /// The background timer takes a rental back between this long and this long plus a quarter of the
    /// shortest of the pool's time spans after it began. A release of the slot after that changes
    /// nothing, throws nothing, and is counted.
    /// </remarks>
    public TimeSpan? AbandonedRentalTimeout { get; set; }

    /// <summary>
    /// Gets or sets how many objects a pool that makes them asynchronously (see
    /// <see cref="Pool{T}.ObjectConstructorAsync"/>) makes at once, at least 1; the default is
    /// <see cref="DefaultMaxConcurrentCreations"/>.
    /// </summary>
    /// <remarks>
    /// Takers beyond it wait in the same queue as every other taker, served by whichever object comes first. After a
    /// failed creation the pool makes one at a time until one succeeds. A pool that makes its objects synchronously
    /// ignores it: each taker makes its own, as the cap allows.
    /// </remarks>
    public int MaxConcurrentCreations { get; set; } = DefaultMaxConcurrentCreations;

    /// <summary>
    /// Gets or sets how long an asynchronous creation may take before its cancellation token is cancelled and it
    /// fails with <see cref="TimeoutException"/>; <see langword="null"/> for no limit. The default is
    /// <see cref="DefaultCreateTimeout"/>.
    /// </summary>
    /// <remarks>
    /// Apart from a take's own timeout: a creation is not tied to the taker that started it. A factory that ignores
    /// its token keeps its place among <see cref="MaxConcurrentCreations"/> until it returns. A pool that makes its
    /// objects synchronously ignores it.
    /// </remarks>
    public TimeSpan? CreateTimeout { get; set; } = DefaultCreateTimeout;

    /// <summary>
    /// Gets or sets how long an object may stay idle before <see cref="Pool{T}.TakeSlotAsync"/> checks it with
    /// <see cref="Pool{T}.ValidateAsync"/> before handing it out; <see langword="null"/> (the default) never.
    /// </summary>
    /// <remarks>
    /// While it is set, each release reads the clock once, and each asynchronous take reads it once for the object
    /// it found; synchronous takes run only <see cref="Pool{T}.Validate"/>. An object that fails is discarded and
    /// the take goes on with another.
    /// </remarks>
    public TimeSpan? ValidateAfterIdle { get; set; }

    /// <summary>
    /// Gets or sets whether the pool keeps <see cref="MinIdle"/> objects idle by making them in the background,
    /// within <see cref="MaxConcurrentCreations"/>: <see langword="null"/> (the default) for a pool that makes its
    /// objects asynchronously, <see langword="true"/> or <see langword="false"/> to choose.
    /// </summary>
    /// <remarks>
    /// Filling begins at the pool's first take, or when <see cref="Pool.Create{T}(PoolOptions, Func{CancellationToken, ValueTask{T}}, Action{T}?)"/>
    /// returns it, and goes on after every discard, trim and expiry. A failed creation backs off before the next.
    /// </remarks>
    public bool? FillMinIdle { get; set; }

    /// <summary>
    /// Gets or sets the clock and timers the pool uses for its time-based options and for the
    /// <c>pool.use_time</c> and <c>pool.create_time</c> histograms; <see langword="null"/> (the default)
    /// for <see cref="TimeProvider.System"/>.
    /// </summary>
    public TimeProvider? TimeProvider { get; set; }

    /// <summary>Checks the default name a subclass gives its pools, under that parameter's name.</summary>
    internal static string ValidDefaultName(string defaultName)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(defaultName);
        return defaultName;
    }

    /// <summary>The options of a pool made with its cap alone, checked under that parameter's name.</summary>
    internal static PoolOptions ForCapacity(int maxCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxCapacity, 1);
        return new PoolOptions { MaxCapacity = maxCapacity };
    }

    /// <summary>
    /// Makes the options a configuration section holds, strictly: a key that names no option, or a value that does not
    /// convert or is out of range, throws naming the key's path, so that a typo cannot leave a default in force.
    /// </summary>
    /// <param name="section">
    /// The section, by the options' property names (<c>MaxCapacity</c>, <c>Name</c>, <c>IdleTimeout</c> as <c>hh:mm:ss</c>
    /// or <c>d.hh:mm:ss</c>, ...); <see cref="TimeProvider"/> cannot be set here.
    /// </param>
    /// <returns>New options, checked as a pool's constructor checks them.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="section"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">A key or value is invalid; the message names the key's full path.</exception>
    /// <remarks>For a subclass of <see cref="Pool{T}"/> whose options come from configuration; <see cref="PoolServiceCollectionExtensions"/> reads them so.</remarks>
    public static PoolOptions FromConfiguration(IConfiguration section)
    {
        ArgumentNullException.ThrowIfNull(section);
        return PoolOptionsBinder.Bind(section, nameof(section));
    }

    /// <summary>Rejects a value out of range, naming the option as <c>options.Name</c>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">A number or time span is out of range.</exception>
    /// <exception cref="ArgumentException"><see cref="Name"/> is empty or white space.</exception>
    internal void Validate()
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(MaxCapacity, 1, $"options.{nameof(MaxCapacity)}");
        ArgumentOutOfRangeException.ThrowIfNegative(MinIdle, $"options.{nameof(MinIdle)}");
        ArgumentOutOfRangeException.ThrowIfGreaterThan(MinIdle, MaxCapacity, $"options.{nameof(MinIdle)}");
        if (LeakSamplingInterval is { } leakSamplingInterval)
        {
            ArgumentOutOfRangeException.ThrowIfNegative(leakSamplingInterval, $"options.{nameof(LeakSamplingInterval)}");
        }

        ArgumentOutOfRangeException.ThrowIfLessThan(MaxConcurrentCreations, 1, $"options.{nameof(MaxConcurrentCreations)}");
        if (Name is { } name && string.IsNullOrWhiteSpace(name))
        {
            throw new ArgumentException("The pool's name must not be empty or white space.", $"options.{nameof(Name)}");
        }

        foreach ((TimeSpan? span, string option) in TimeSpans.Append((CreateTimeout, nameof(CreateTimeout))).Append((ValidateAfterIdle, nameof(ValidateAfterIdle))))
        {
            if (span is { } positive)
            {
                ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(positive, TimeSpan.Zero, $"options.{option}");
            }
        }

        // The creation's timer takes at most this many milliseconds.
        if (CreateTimeout is { } createTimeout)
        {
            ArgumentOutOfRangeException.ThrowIfGreaterThan(createTimeout, TimeSpan.FromMilliseconds(uint.MaxValue - 1), $"options.{nameof(CreateTimeout)}");
        }
    }

    /// <summary>Gets the time-span options with their names: each is off when null, and positive when set.</summary>
    internal (TimeSpan? Span, string Name)[] TimeSpans =>
    [
        (IdleTimeout, nameof(IdleTimeout)),
        (LeakDetectionThreshold, nameof(LeakDetectionThreshold)),
        (MaxObjectLifetime, nameof(MaxObjectLifetime)),
        (AbandonedRentalTimeout, nameof(AbandonedRentalTimeout)),
    ];
}
