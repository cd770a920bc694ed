using System.Buffers.Text;
using System.Collections.Concurrent;
using System.Diagnostics.CodeAnalysis;

namespace SocketServers.Resp;

/// <summary>
/// The keys and values of the RESP sample, in memory, shared by every connection. Looked up by the bytes of a request
/// without copying them; a value rewritten with one no longer than the old one is written in place, so that a steady
/// load of SET, GET and INCR allocates nothing.
/// </summary>
/// <remarks>Thread-safe: each value has a lock, held only while its bytes are copied.</remarks>
internal sealed class RespStore
{
    private readonly ConcurrentDictionary<byte[], Entry> _entries;
    private readonly ConcurrentDictionary<byte[], Entry>.AlternateLookup<ReadOnlySpan<byte>> _byBytes;

    public RespStore()
    {
        _entries = new ConcurrentDictionary<byte[], Entry>(KeyComparer.Instance);
        _byBytes = _entries.GetAlternateLookup<ReadOnlySpan<byte>>();
    }

    /// <summary>Gets how many keys the store holds.</summary>
    public int Count => _entries.Count;

    /// <summary>Sets <paramref name="key"/> to <paramref name="value"/>.</summary>
    public void Set(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        while (true)
        {
            if (_byBytes.TryGetValue(key, out Entry? entry) && entry.TrySet(value))
            {
                return;
            }

            if (entry is null && _byBytes.TryAdd(key, new Entry(value)))
            {
                return;
            }

            // Removed, or added by another connection, meanwhile: look again.
        }
    }

    /// <summary>Copies the value of <paramref name="key"/> into <paramref name="destination"/>, if it fits.</summary>
    /// <returns>The value's length, copied if it is no longer than <paramref name="destination"/>; -1 when there is no such key.</returns>
    public int CopyTo(ReadOnlySpan<byte> key, Span<byte> destination)
        => _byBytes.TryGetValue(key, out Entry? entry) ? entry.CopyTo(destination) : -1;

    /// <summary>Gets whether <paramref name="key"/> is there.</summary>
    public bool Contains(ReadOnlySpan<byte> key) => _byBytes.ContainsKey(key);

    /// <summary>Removes <paramref name="key"/>.</summary>
    /// <returns>Whether it was there.</returns>
    public bool Remove(ReadOnlySpan<byte> key)
    {
        if (!_byBytes.TryRemove(key, out _, out Entry? entry))
        {
            return false;
        }

        entry.MarkRemoved();
        return true;
    }

    /// <summary>Adds 1 to the integer <paramref name="key"/> holds (0 when absent).</summary>
    /// <returns>Whether it was done, or why not; the new value in <paramref name="result"/>.</returns>
    public IncrementOutcome Increment(ReadOnlySpan<byte> key, out long result)
    {
        Span<byte> initial = stackalloc byte[1];
        while (true)
        {
            if (_byBytes.TryGetValue(key, out Entry? entry))
            {
                IncrementOutcome outcome = entry.TryIncrement(out result);
                if (outcome != IncrementOutcome.Removed)
                {
                    return outcome;
                }

                continue; // Removed meanwhile.
            }

            initial[0] = (byte)'1';
            if (_byBytes.TryAdd(key, new Entry(initial)))
            {
                result = 1;
                return IncrementOutcome.Done;
            }
        }
    }

    /// <summary>What <see cref="Increment"/> did.</summary>
    internal enum IncrementOutcome
    {
        /// <summary>The value is the old one plus 1.</summary>
        Done,

        /// <summary>The value is not an integer; unchanged.</summary>
        NotAnInteger,

        /// <summary>The value is <see cref="long.MaxValue"/>; unchanged.</summary>
        Overflow,

        /// <summary>The entry was removed meanwhile (never returned by <see cref="Increment"/>).</summary>
        Removed,
    }

    /// <summary>One value: its bytes in a buffer that a value no longer than it reuses.</summary>
    private sealed class Entry
    {
        private readonly Lock _lock = new();

        // Guarded by _lock.
        private byte[] _bytes;
        private int _length;
        private bool _removed;

        public Entry(ReadOnlySpan<byte> value)
        {
            _bytes = value.ToArray();
            _length = value.Length;
        }

        /// <returns>Whether it was set: not once removed.</returns>
        public bool TrySet(ReadOnlySpan<byte> value)
        {
            lock (_lock)
            {
                if (_removed)
                {
                    return false;
                }

                if (value.Length > _bytes.Length)
                {
                    _bytes = new byte[value.Length];
                }

                value.CopyTo(_bytes);
                _length = value.Length;
                return true;
            }
        }

        public int CopyTo(Span<byte> destination)
        {
            lock (_lock)
            {
                if (_length <= destination.Length)
                {
                    _bytes.AsSpan(0, _length).CopyTo(destination);
                }

                return _length;
            }
        }

        public IncrementOutcome TryIncrement(out long result)
        {
            lock (_lock)
            {
                result = 0;
                if (_removed)
                {
                    return IncrementOutcome.Removed;
                }

                if (!RespInteger.TryParse(_bytes.AsSpan(0, _length), out long value))
                {
                    return IncrementOutcome.NotAnInteger;
                }

                if (value == long.MaxValue)
                {
                    return IncrementOutcome.Overflow;
                }

                result = value + 1;
                if (_bytes.Length < 20)
                {
                    _bytes = new byte[20];
                }

                Utf8Formatter.TryFormat(result, _bytes, out _length);
                return IncrementOutcome.Done;
            }
        }

        public void MarkRemoved()
        {
            lock (_lock)
            {
                _removed = true;
            }
        }
    }

    /// <summary>Compares keys by their bytes, and byte arrays with the spans of a request.</summary>
    private sealed class KeyComparer : IEqualityComparer<byte[]>, IAlternateEqualityComparer<ReadOnlySpan<byte>, byte[]>
    {
        public static KeyComparer Instance { get; } = new();

        public bool Equals(byte[]? x, byte[]? y) => x is null ? y is null : y is not null && x.AsSpan().SequenceEqual(y);

        public int GetHashCode([DisallowNull] byte[] obj) => GetHashCode((ReadOnlySpan<byte>)obj);

        public bool Equals(ReadOnlySpan<byte> alternate, byte[] other) => alternate.SequenceEqual(other);

        public int GetHashCode(ReadOnlySpan<byte> alternate)
        {
            var hash = new HashCode();
            hash.AddBytes(alternate);
            return hash.ToHashCode();
        }

        public byte[] Create(ReadOnlySpan<byte> alternate) => alternate.ToArray();
    }
}
