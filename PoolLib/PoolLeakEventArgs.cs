using System.Diagnostics;

namespace PoolLib;

/// <summary>
/// Describes a rental held longer than the pool's <see cref="PoolOptions.LeakDetectionThreshold"/>: when it
/// is reported (<see cref="Pool{T}.RentalLeakSuspected"/>), and when it comes back (<see cref="Pool{T}.LeakedRentalReturned"/>).
/// </summary>
public sealed class PoolLeakEventArgs : EventArgs
{
    /// <summary>Initialises the description of a suspected leak.</summary>
    /// <param name="poolName">The name of the pool the object was taken from.</param>
    /// <param name="heldFor">How long the object had been rented when the pool noticed.</param>
    /// <param name="stackTrace">Where the object was taken, or <see langword="null"/> if the rental was not sampled.</param>
    /// <exception cref="ArgumentNullException"><paramref name="poolName"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="heldFor"/> is negative.</exception>
    public PoolLeakEventArgs(string poolName, TimeSpan heldFor, StackTrace? stackTrace)
    {
        ArgumentNullException.ThrowIfNull(poolName);
        ArgumentOutOfRangeException.ThrowIfLessThan(heldFor, TimeSpan.Zero);
        PoolName = poolName;
        HeldFor = heldFor;
        StackTrace = stackTrace;
    }

    /// <summary>Gets the name of the pool the object was taken from (<see cref="Pool{T}.Name"/>).</summary>
    public string PoolName { get; }

    /// <summary>
    /// Gets how long the object had been rented when the pool noticed; for a rental that was not
    /// sampled, counted from when the pool's timer first saw it rented, so it may have been held a little longer.
    /// </summary>
    public TimeSpan HeldFor { get; }

    /// <summary>
    /// Gets where the object was taken, starting at the frame that called the pool; <see langword="null"/>
    /// when the rental was not one of those sampled (see <see cref="PoolOptions.LeakSamplingInterval"/>).
    /// </summary>
    public StackTrace? StackTrace { get; }

    /// <summary>Describes the rental in a line, followed by where it was taken if that is known.</summary>
    /// <returns>The description, for a log.</returns>
    public override string ToString() =>
        StackTrace is { } trace
            ? $"A rental from pool '{PoolName}' held for {HeldFor}, taken at:{Environment.NewLine}{trace}"
            : $"A rental from pool '{PoolName}' held for {HeldFor}; where it was taken is unknown: it was not one of the rentals sampled (PoolOptions.LeakSamplingInterval).";
}
