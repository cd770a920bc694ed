using System.Numerics;

namespace PoolBench.Echo.Load;

/// <summary>
/// A fixed-size log-linear histogram of latencies in nanoseconds (the HdrHistogram layout in
/// small): values below 64 have a bucket each; above, every power of two is split into 32
/// buckets, so a reported percentile is within about 3% of the true value. Recording allocates
/// nothing; each client owns one and the scenario merges them afterwards.
/// </summary>
internal sealed class LatencyHistogram
{
    private const int LinearBuckets = 64;
    private const int SubBuckets = 32;
    private const int SubBucketBits = 5;

    private readonly long[] _counts = new long[LinearBuckets + (64 - SubBucketBits - 1) * SubBuckets];

    public long Count { get; private set; }

    public void Record(long nanoseconds)
    {
        _counts[Index(Math.Max(0, nanoseconds))]++;
        Count++;
    }

    public void Add(LatencyHistogram other)
    {
        for (int i = 0; i < _counts.Length; i++)
        {
            _counts[i] += other._counts[i];
        }

        Count += other.Count;
    }

    /// <summary>The counts of the buckets that hold any, by bucket index: what another process needs to merge this one.</summary>
    public Dictionary<int, long> NonEmptyBuckets()
    {
        var buckets = new Dictionary<int, long>();
        for (int i = 0; i < _counts.Length; i++)
        {
            if (_counts[i] != 0)
            {
                buckets[i] = _counts[i];
            }
        }

        return buckets;
    }

    /// <summary>A histogram with the bucket counts of <see cref="NonEmptyBuckets"/>.</summary>
    /// <exception cref="ArgumentOutOfRangeException">An index names no bucket, or a count is negative.</exception>
    public static LatencyHistogram FromBuckets(IReadOnlyDictionary<int, long> buckets)
    {
        var histogram = new LatencyHistogram();
        foreach ((int index, long count) in buckets)
        {
            ArgumentOutOfRangeException.ThrowIfNegative(index);
            ArgumentOutOfRangeException.ThrowIfGreaterThanOrEqual(index, histogram._counts.Length);
            ArgumentOutOfRangeException.ThrowIfNegative(count);
            histogram._counts[index] = count;
            histogram.Count += count;
        }

        return histogram;
    }

    /// <summary>The value at <paramref name="percentile"/> (0 to 100) in microseconds, or null when empty.</summary>
    public double? PercentileMicroseconds(double percentile)
    {
        if (Count == 0)
        {
            return null;
        }

        long rank = Math.Max(1, (long)Math.Ceiling(percentile / 100 * Count));
        long seen = 0;
        for (int i = 0; i < _counts.Length; i++)
        {
            seen += _counts[i];
            if (seen >= rank)
            {
                return Middle(i) / 1000.0;
            }
        }

        return Middle(_counts.Length - 1) / 1000.0;
    }

    private static int Index(long value)
    {
        if (value < LinearBuckets)
        {
            return (int)value;
        }

        int shift = BitOperations.Log2((ulong)value) - SubBucketBits;
        return LinearBuckets + (shift - 1) * SubBuckets + (int)(value >> shift) - SubBuckets;
    }

    private static double Middle(int index)
    {
        if (index < LinearBuckets)
        {
            return index;
        }

        int shift = (index - LinearBuckets) / SubBuckets + 1;
        long low = (long)((index - LinearBuckets) % SubBuckets + SubBuckets) << shift;
        return low + ((1L << shift) - 1) / 2.0;
    }
}
