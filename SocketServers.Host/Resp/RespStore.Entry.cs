using System.Buffers.Text;
using System.Diagnostics.CodeAnalysis;

namespace SocketServers.Resp;

internal sealed partial class RespStore
{
    /// <summary>One key and its value: the value's bytes in a buffer that a value no longer than it reuses.</summary>
    private sealed class Entry
    {
        private readonly Lock _lock = new();

        // Guarded by _lock; frozen once _removed.
        private byte[] _bytes;
        private int _length;
        private bool _removed;

        // Written under _lock, frozen once _removed; read without it, since a key that expires a moment early or late
        // for a reader racing the write is no harm. 0 for never.
        private long _expiresAt;

        public Entry(byte[] key, ReadOnlySpan<byte> value, long expiresAt)
        {
            Key = key;
            _bytes = value.ToArray();
            _length = value.Length;
            _expiresAt = expiresAt;
        }

        /// <summary>Gets the key, the dictionary's own copy.</summary>
        public byte[] Key { get; }

        /// <summary>Gets when the key expires, in <see cref="Now"/>'s milliseconds; 0 for never.</summary>
        public long ExpiresAt => Volatile.Read(ref _expiresAt);

        /// <summary>Gets what the entry takes in <see cref="UsedMemory"/>: read once it is removed, when it no longer changes.</summary>
        public long Size => EntryOverhead + Key.Length + _bytes.Length;

        /// <returns>Done; Removed once removed; OutOfMemory when a longer buffer would pass the limit.</returns>
        public SetOutcome TrySet(RespStore store, ReadOnlySpan<byte> value, long expiresAt)
        {
            lock (_lock)
            {
                if (_removed)
                {
                    return SetOutcome.Removed;
                }

                if (value.Length > _bytes.Length)
                {
                    if (!store.TryReserve(value.Length - _bytes.Length))
                    {
                        return SetOutcome.OutOfMemory;
                    }

                    _bytes = new byte[value.Length];
                }

                value.CopyTo(_bytes);
                _length = value.Length;
                if (expiresAt != KeepExpiry)
                {
                    if (_expiresAt == 0 && expiresAt != 0)
                    {
                        store._expiring.TryAdd(this, 0);
                    }
                    else if (_expiresAt != 0 && expiresAt == 0)
                    {
                        store._expiring.TryRemove(this, out _);
                    }

                    Volatile.Write(ref _expiresAt, expiresAt);
                }

                return SetOutcome.Done;
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

        public IncrementOutcome TryIncrement(RespStore store, out long result)
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

                if (_bytes.Length < 20)
                {
                    if (!store.TryReserve(20 - _bytes.Length))
                    {
                        return IncrementOutcome.OutOfMemory;
                    }

                    _bytes = new byte[20];
                }

                result = value + 1;
                Utf8Formatter.TryFormat(result, _bytes, out _length);
                return IncrementOutcome.Done;
            }
        }

        /// <summary>Marks the entry removed, for DEL.</summary>
        /// <returns>Whether it was live: not removed before, and not expired at <paramref name="now"/>.</returns>
        public bool MarkRemoved(long now)
        {
            lock (_lock)
            {
                bool live = !_removed && (_expiresAt == 0 || _expiresAt > now);
                _removed = true;
                return live;
            }
        }

        /// <summary>Marks the entry removed if it has expired by <paramref name="now"/>.</summary>
        /// <returns>Whether it was removed, or had been.</returns>
        public bool TryMarkExpired(long now)
        {
            lock (_lock)
            {
                _removed |= _expiresAt != 0 && _expiresAt <= now;
                return _removed;
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
