using System.Diagnostics;

namespace PoolLib;

/// <summary>Describes a rental held longer than the pool's <see cref="PoolOptions.LeakDetectionThreshold"/>.</summary>
public sealed class PoolLeakEventArgs : EventArgs
{
    /// <summary>Initialises the description of a suspected leak.</summary>
    /// <param name="poolName">The name of the pool the object was taken from.</param>
    /// <param name="heldFor">How long the object had been rented when the pool noticed.</param>
    /// <param name="stackTrace">Where the object was taken.</param>
    /// <exception cref="ArgumentNullException"><paramref name="poolName"/> or <paramref name="stackTrace"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="heldFor"/> is negative.</exception>
    public PoolLeakEventArgs(string poolName, TimeSpan heldFor, StackTrace stackTrace)
    {
        ArgumentNullException.ThrowIfNull(poolName);
        ArgumentNullException.ThrowIfNull(stackTrace);
        ArgumentOutOfRangeException.ThrowIfLessThan(heldFor, TimeSpan.Zero);
        PoolName = poolName;
        HeldFor = heldFor;
        StackTrace = stackTrace;
    }

    /// <summary>Gets the name of the pool the object was taken from (<see cref="Pool{T}.Name"/>).</summary>
    public string PoolName { get; }

    /// <summary>Gets how long the object had been rented when the pool noticed.</summary>
    public TimeSpan HeldFor { get; }

    /// <summary>Gets the stack trace captured when the object was taken.</summary>
    public StackTrace StackTrace { get; }
}
