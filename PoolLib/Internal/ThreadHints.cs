using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// One thread's hints of the slots it took, as registry indices, tried first on its next takes. Only
/// the owner thread writes it. It also holds the thread's leak-sampling countdown and its share of the
/// pool's idle count, which other threads read.
/// </summary>
/// <remarks>
/// The first <see cref="_ready"/> hints are slots taken before the hints were last made ready and not
/// taken since; the rest, up to <see cref="_count"/>, were taken since. When none is ready, all are made
/// ready again if the newest is back: a thread that returned its last take has most likely returned
/// the others too, and one that still holds it (in a long rental) looks no further than that slot.
/// </remarks>
internal sealed class ThreadHints<T> where T : class
{
    private const int InitialLength = 8;

    private int[] _entries = new int[InitialLength];
    private int _count;
    private int _ready;

    // Which of this thread's takes record where they were taken, while leak detection samples.
    private LeakSampleCountdown _leakSampling;

    // Slots this thread made idle less those it claimed idle. Invariant: only the owner writes it, each idle slot was
    // counted once by its publisher and is uncounted once by its claimer, so the sum over every thread's hints is the
    // pool's idle count whenever no take or release is in flight.
    private long _idleBalance;

#pragma warning disable CS0169 // Never read: it only takes up room (see CacheLinePadding).
    private CacheLinePadding _padding;
#pragma warning restore CS0169

    /// <param name="leakSamplingInterval">One take in this many is sampled, or <see cref="LeakSampleCountdown.Adaptive"/>; 0 while leak detection does not sample.</param>
    public ThreadHints(int leakSamplingInterval)
    {
        if (leakSamplingInterval != 0)
        {
            _leakSampling = new LeakSampleCountdown(leakSamplingInterval);
        }
    }

    /// <summary>Claims the newest ready hinted slot that is idle, retired or not (the caller checks), dropping stale hints on the way.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool TryTake(PoolSlot<T>?[] slots, [NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        int ready = _ready;
        bool renewing = ready == 0;
        ready = (renewing ? _count : ready) - 1;
        int[] entries = _entries;
        if ((uint)ready < (uint)entries.Length && (uint)entries[ready] < (uint)slots.Length
            && slots[entries[ready]] is { } newest && newest.TryClaimIdle())
        {
            _ready = ready;
            CountIdle(-1);
            slot = newest;
            return true;
        }

        if (!renewing)
        {
            // That ready hint was stale: it goes, its place to the last hint, which is not ready.
            _ready = ready;
            entries[ready] = entries[--_count];
            return TryTakeReady(slots, out slot);
        }

        slot = null;
        return false;
    }

    /// <summary>Counts a take on the fast path; true when it is due to be sampled, which only the slow path does.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool CountDownToLeakSample() => _leakSampling.CountDown();

    /// <summary>Counts a take on the slow path (unless the fast path did) and, if it is due, records where it began.</summary>
    /// <param name="time">The pool's clock, read only when a trace is taken.</param>
    public StackTrace? SampleLeak(TimeProvider time) => _leakSampling.Sample(time);

    /// <summary>Gets <see cref="_idleBalance"/>, for a reader on any thread.</summary>
    public long IdleBalance => Volatile.Read(ref _idleBalance);

    /// <summary>Counts a slot this thread made idle (+1) or claimed idle (-1); only the owner thread calls it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void CountIdle(int change) => Volatile.Write(ref _idleBalance, _idleBalance + change);

    /// <summary>Hints a slot this thread took from elsewhere than its hints (made, found or handed over).</summary>
    /// <param name="index">The slot's registry index.</param>
    /// <param name="maxLength">How many hints the thread may keep: more than the pool's cap would never help.</param>
    public void Hint(int index, int maxLength)
    {
        int[] entries = _entries;
        if (_count == entries.Length)
        {
            if (entries.Length < maxLength)
            {
                Array.Resize(ref entries, entries.Length * 2);
                _entries = entries;
            }
            else
            {
                // Full: the older half goes, so that the newest hint is always the slot taken last.
                int kept = entries.Length / 2;
                Array.Copy(entries, entries.Length - kept, entries, 0, kept);
                _ready = Math.Max(0, _ready - (entries.Length - kept));
                _count = kept;
            }
        }

        entries[_count++] = index;
    }

    /// <summary>
    /// The rest of <see cref="TryTake"/>: the newest ready hint was stale (another thread holds its
    /// slot, or it was discarded). Tries the other ready hints, newest first, dropping each
    /// stale one: its place goes to the last hint, which is not ready.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool TryTakeReady(PoolSlot<T>?[] slots, [NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        int[] entries = _entries;
        while (_ready > 0)
        {
            int ready = --_ready;
            if ((uint)entries[ready] < (uint)slots.Length && slots[entries[ready]] is { } candidate && candidate.TryClaimIdle())
            {
                CountIdle(-1);
                slot = candidate;
                return true;
            }

            entries[ready] = entries[--_count];
        }

        slot = null;
        return false;
    }
}
