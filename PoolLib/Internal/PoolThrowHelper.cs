using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;

namespace PoolLib.Internal;

/// <summary>The pool's throws, out of line so that the paths that may throw stay small.</summary>
internal static class PoolThrowHelper
{
    /// <summary>Rethrows the one failure as it is, or several in an <see cref="AggregateException"/>; nothing if none.</summary>
    [StackTraceHidden]
    public static void ThrowIfAny(List<Exception>? failures)
    {
        if (failures is null)
        {
            return;
        }

        if (failures.Count == 1)
        {
            ExceptionDispatchInfo.Throw(failures[0]);
        }

        throw new AggregateException(failures);
    }

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    public static void ThrowForeignSlot(string paramName) =>
        throw new ArgumentException("The slot belongs to another pool.", paramName);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    public static void ThrowSlotAlreadyReturned() =>
        throw new InvalidOperationException("The slot was already returned: it was released or disposed twice, or rented again since.");

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    public static void ThrowTimeoutOutOfRange(string paramName) =>
        throw new ArgumentOutOfRangeException(paramName, "The timeout must be Timeout.InfiniteTimeSpan or from zero to int.MaxValue milliseconds.");
}
