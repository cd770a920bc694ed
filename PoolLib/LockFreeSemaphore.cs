using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>
/// A counting semaphore that never blocks: <see cref="TryTake"/> and <see cref="Release"/> are
/// compare-and-swap loops on one integer.
/// </summary>
/// <remarks>
/// Every member is safe to call from any number of threads at once; each successful take and release
/// changes the count by exactly one, which never leaves 0 to <see cref="MaxCount"/>. Lock-free (some
/// thread always makes progress), not fair, and with no waiting: a caller that needs to wait for a unit
/// builds that on top, as <see cref="Pool{T}"/> does.
/// </remarks>
public sealed class LockFreeSemaphore
{
    // Invariant: 0 <= _currentCount <= _maxCount at every instant. It only changes through a
    // successful Interlocked.CompareExchange whose expected value was checked against the bounds.
    private int _currentCount;
    private readonly int _maxCount;

    /// <summary>Creates a semaphore holding <paramref name="initialCount"/> of <paramref name="maxCount"/> units.</summary>
    /// <param name="initialCount">The units available at first; from 0 to <paramref name="maxCount"/>.</param>
    /// <param name="maxCount">The most units the semaphore can hold; at least 1.</param>
    /// <exception cref="ArgumentOutOfRangeException">
    /// <paramref name="maxCount"/> is less than 1, or <paramref name="initialCount"/> is negative or
    /// greater than <paramref name="maxCount"/>.
    /// </exception>
    public LockFreeSemaphore(int initialCount, int maxCount)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxCount, 1);
        ArgumentOutOfRangeException.ThrowIfNegative(initialCount);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(initialCount, maxCount);

        _currentCount = initialCount;
        _maxCount = maxCount;
    }

    /// <summary>Gets the units available right now.</summary>
    /// <remarks>A snapshot: under concurrent use it may be stale as soon as it is read.</remarks>
    public int CurrentCount => Volatile.Read(ref _currentCount);

    /// <summary>Gets the most units the semaphore can hold.</summary>
    public int MaxCount => _maxCount;

    /// <summary>Takes one unit if there is one. Never blocks.</summary>
    /// <returns><see langword="true"/> if a unit was taken; <see langword="false"/> if the count was zero.</returns>
    /// <remarks>Safe to call from any thread.</remarks>
    public bool TryTake()
    {
        var backoff = new RetryBackoff();
        while (true)
        {
            int current = Volatile.Read(ref _currentCount);
            if (current == 0)
            {
                return false;
            }

            Debug.Assert(current > 0 && current <= _maxCount);
            if (Interlocked.CompareExchange(ref _currentCount, current - 1, current) == current)
            {
                return true;
            }

            backoff.Wait();
        }
    }

    /// <summary>Gives one unit back. Never blocks.</summary>
    /// <exception cref="SemaphoreFullException">The semaphore already holds <see cref="MaxCount"/> units.</exception>
    /// <remarks>Safe to call from any thread. A release that throws leaves the count unchanged.</remarks>
    public void Release()
    {
        var backoff = new RetryBackoff();
        while (true)
        {
            int current = Volatile.Read(ref _currentCount);
            if (current == _maxCount)
            {
                ThrowSemaphoreFull();
            }

            Debug.Assert(current >= 0 && current < _maxCount);
            if (Interlocked.CompareExchange(ref _currentCount, current + 1, current) == current)
            {
                return;
            }

            backoff.Wait();
        }
    }

    /// <inheritdoc/>
    public override string ToString() => $"{CurrentCount}/{MaxCount}";

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowSemaphoreFull() => throw new SemaphoreFullException();
}
