using System.Buffers.Binary;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;

namespace SocketServers.Internal;

/// <summary>Lets through at most a given number of datagrams per second from each sender endpoint (address and port), in a
/// table of fixed size: memory does not grow with the number of senders, and a call allocates nothing.</summary>
/// <remarks>
/// Algorithm, lock-free (a count-min sketch of one row, probed twice): a seeded hash of the sender picks two buckets of
/// <see cref="_buckets"/>, each counting in one-second windows. A call is let through when both count fewer than the
/// limit in the current window, and then counts itself in both, each with a CompareExchange that checks the limit again.
/// Guarantees: a sender is let through at most the limit per window, however many callers race; senders that share a
/// bucket share its count, so under a flood a sender may get fewer, never more. Lock-free, not wait-free: a failed
/// CompareExchange is retried, and fails only because another caller's succeeded. Every member is thread-safe.
/// </remarks>
internal sealed class EndpointRateLimiter
{
    /// <summary>Buckets in the table: 32 KiB of them.</summary>
    public const int BucketCount = 4096;

    private const int BucketMask = BucketCount - 1;
    private const int WindowMilliseconds = 1000;
    private const int CountBits = 32;
    private const long CountMask = uint.MaxValue;

    // (window << CountBits) | datagrams let through in that window. Invariant: the count never exceeds _limit; it
    // grows only by a CompareExchange that saw it below _limit in the same window, and a new window starts at 1.
    private readonly long[] _buckets = new long[BucketCount];
    private readonly int _limit;

    // Random per instance, so that a sender cannot choose which buckets its addresses land in.
    private readonly ulong _seed;

    // The windows count from the limiter's creation, so that they fit above the count in a bucket whatever the clock.
    private readonly MillisecondClock _clock;
    private readonly long _origin;

    /// <summary>Creates a limiter that lets through <paramref name="limitPerSecond"/> datagrams a second from each
    /// sender.</summary>
    /// <param name="limitPerSecond">At least 1.</param>
    /// <param name="clock">The clock; <see langword="null"/> for the system's. Tests pass one they move by hand.</param>
    /// <param name="seed">The hash seed; <see langword="null"/> for a random one. Tests pass a fixed one.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="limitPerSecond"/> is below 1.</exception>
    public EndpointRateLimiter(int limitPerSecond, MillisecondClock? clock = null, ulong? seed = null)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(limitPerSecond, 1);
        _limit = limitPerSecond;
        _clock = clock ?? MillisecondClock.System;
        _origin = _clock.Now;
        _seed = seed ?? (ulong)Random.Shared.NextInt64();
    }

    /// <summary>Decides whether a datagram from <paramref name="sender"/> may be answered now, and counts it if so.</summary>
    /// <param name="sender">The datagram's sender.</param>
    /// <returns>Whether the sender is still below the limit in this second.</returns>
    public bool TryAcquire(IPEndPoint sender)
    {
        ulong hash = Hash(sender);
        int first = (int)(hash & BucketMask);
        int second = (int)((hash >> 32) & BucketMask);
        if (second == first)
        {
            // Two probes of one bucket would count each datagram twice in it.
            second ^= 1;
        }

        long window = (_clock.Now - _origin) / WindowMilliseconds;
        Debug.Assert(window is >= 0 and <= int.MaxValue, "The windows count from the creation and fit above the count.");

        // When the second bucket refuses after the first counted, the first keeps that count: only stricter.
        return TryCount(ref _buckets[first], window) && TryCount(ref _buckets[second], window);
    }

    /// <returns>Whether <paramref name="bucket"/> was below the limit in <paramref name="window"/> and has counted one more.</returns>
    private bool TryCount(ref long bucket, long window)
    {
        long seen = Volatile.Read(ref bucket);
        while (true)
        {
            long next;

            // A window read before another caller opened a later one counts as that later one.
            if ((seen >> CountBits) >= window)
            {
                if ((seen & CountMask) >= _limit)
                {
                    // A full bucket is only read, so a refused flood writes nothing.
                    return false;
                }

                next = seen + 1;
            }
            else
            {
                next = (window << CountBits) | 1;
            }

            Debug.Assert((next & CountMask) <= _limit, "A bucket never counts more than the limit in a window.");
            long was = Interlocked.CompareExchange(ref bucket, next, seen);
            if (was == seen)
            {
                return true;
            }

            seen = was;
        }
    }

    /// <summary>A seeded 64-bit hash of the sender's address, scope and port.</summary>
    private ulong Hash(IPEndPoint sender)
    {
        Span<byte> address = stackalloc byte[16];
        address.Clear();
        sender.Address.TryWriteBytes(address, out _);
        ulong hash = Mix(_seed ^ BinaryPrimitives.ReadUInt64LittleEndian(address));
        hash = Mix(hash ^ BinaryPrimitives.ReadUInt64LittleEndian(address[8..]));
        long scope = sender.AddressFamily == AddressFamily.InterNetworkV6 ? sender.Address.ScopeId : 0;
        return Mix(hash ^ (ulong)(uint)sender.Port ^ ((ulong)scope << 16));
    }

    // MurmurHash3's 64-bit finalizer: every input bit affects every output bit.
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static ulong Mix(ulong value)
    {
        value ^= value >> 33;
        value *= 0xff51afd7ed558ccdUL;
        value ^= value >> 33;
        value *= 0xc4ceb9fe1a85ec53UL;
        value ^= value >> 33;
        return value;
    }
}
