using System.Collections.Concurrent;

namespace SocketServers.Resp;

/// <summary>
/// The keys and values of the RESP sample, in memory, shared by every connection. Looked up by the bytes of a request
/// without copying them; a value rewritten with one no longer than the old one is written in place, so that a steady
/// load of SET, GET and INCR allocates nothing. Keys may expire, as in Redis: lazily when touched, and by a bounded
/// sweep on the clock's timer. With a <see cref="MaxMemory"/>, a write that would pass it is refused (Redis's
/// noeviction policy), by the store's own accounting of keys, values and a fixed cost per key.
/// </summary>
/// <remarks>Thread-safe: each value has a lock, held only while its bytes are copied; the memory limit is reserved
/// lock-free.</remarks>
internal sealed partial class RespStore : IDisposable
{
    /// <summary>What a key costs besides its bytes and its value's buffer, as <see cref="UsedMemory"/> counts it: the
    /// dictionary's node, the entry with its lock, and the two arrays' headers, on a 64-bit runtime.</summary>
    public const int EntryOverhead = 200;

    /// <summary>An expiry for <see cref="Set"/> that keeps the one the key has (SET's KEEPTTL).</summary>
    public const long KeepExpiry = -1;

    /// <summary>How often the sweep looks for expired keys that nobody touches.</summary>
    public static readonly TimeSpan SweepInterval = TimeSpan.FromMilliseconds(100);

    private readonly ConcurrentDictionary<byte[], Entry> _entries;
    private readonly ConcurrentDictionary<byte[], Entry>.AlternateLookup<ReadOnlySpan<byte>> _byBytes;

    // The entries with an expiry, for the sweep: an entry is here while it has one and is in _entries (added before it
    // goes in, and on the change of its expiry under its lock; removed once it leaves).
    private readonly ConcurrentDictionary<Entry, byte> _expiring = new(ReferenceEqualityComparer.Instance);
    private readonly TimeProvider _time;
    private readonly long _maxMemory;
    private readonly ITimer _sweepTimer;

    // Invariant: the sum of the Size of the entries in _entries, plus reservations in flight; never over _maxMemory
    // when there is one (reserved by compare-and-swap, never added and then taken back).
    private long _usedMemory;

    /// <summary>Creates a store without a memory limit, on the system clock.</summary>
    public RespStore()
        : this(TimeProvider.System, maxMemory: 0)
    {
    }

    /// <summary>Creates a store.</summary>
    /// <param name="time">The clock keys expire by, and whose timer runs the sweep.</param>
    /// <param name="maxMemory">The most bytes <see cref="UsedMemory"/> may reach; 0 for no limit.</param>
    public RespStore(TimeProvider time, long maxMemory)
    {
        ArgumentNullException.ThrowIfNull(time);
        ArgumentOutOfRangeException.ThrowIfNegative(maxMemory);
        _entries = new ConcurrentDictionary<byte[], Entry>(KeyComparer.Instance);
        _byBytes = _entries.GetAlternateLookup<ReadOnlySpan<byte>>();
        _time = time;
        _maxMemory = maxMemory;
        _sweepTimer = Sweeper.Start(this, time);
    }

    /// <summary>Gets how many keys the store holds, expired ones not yet removed included.</summary>
    public int Count => _entries.Count;

    /// <summary>Gets the bytes the keys and values take by the store's accounting: each key's bytes, its value's
    /// buffer and <see cref="EntryOverhead"/>.</summary>
    public long UsedMemory => Volatile.Read(ref _usedMemory);

    /// <summary>Gets the most bytes <see cref="UsedMemory"/> may reach; 0 for no limit.</summary>
    public long MaxMemory => _maxMemory;

    /// <summary>Gets the clock's time as Redis counts expiry times: milliseconds since the Unix epoch.</summary>
    public long Now => _time.GetUtcNow().ToUnixTimeMilliseconds();

    /// <summary>Sets <paramref name="key"/> to <paramref name="value"/>, with an expiry.</summary>
    /// <param name="key">The key.</param>
    /// <param name="value">The value.</param>
    /// <param name="condition">When to set it: always, only if the key is absent (NX), or only if it is there (XX).</param>
    /// <param name="expiresAt">When the key expires, in <see cref="Now"/>'s milliseconds; 0 for never, or
    /// <see cref="KeepExpiry"/> to keep what it had (KEEPTTL).</param>
    /// <returns>Whether it was set, or why not.</returns>
    public SetOutcome Set(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value, SetCondition condition = SetCondition.Always, long expiresAt = 0)
    {
        while (true)
        {
            if (Find(key) is { } entry)
            {
                if (condition == SetCondition.IfAbsent)
                {
                    return SetOutcome.NotSet;
                }

                SetOutcome outcome = entry.TrySet(this, value, expiresAt);
                if (outcome != SetOutcome.Removed)
                {
                    return outcome;
                }

                Unlink(entry); // removed meanwhile: help it out, then look again
                continue;
            }

            if (condition == SetCondition.IfPresent)
            {
                return SetOutcome.NotSet;
            }

            if (TryAdd(key, value, expiresAt == KeepExpiry ? 0 : expiresAt) is { } added)
            {
                return added;
            }
        }
    }

    /// <summary>Copies the value of <paramref name="key"/> into <paramref name="destination"/>, if it fits.</summary>
    /// <returns>The value's length, copied if it is no longer than <paramref name="destination"/>; -1 when there is no such key.</returns>
    public int CopyTo(ReadOnlySpan<byte> key, Span<byte> destination) => Find(key)?.CopyTo(destination) ?? -1;

    /// <summary>Gets whether <paramref name="key"/> is there.</summary>
    public bool Contains(ReadOnlySpan<byte> key) => Find(key) is not null;

    /// <summary>Gets how long <paramref name="key"/> has to live.</summary>
    /// <returns>Milliseconds, at least 0; -1 for a key that does not expire; -2 for no such key.</returns>
    public long TimeToLive(ReadOnlySpan<byte> key)
    {
        if (Find(key) is not { } entry)
        {
            return -2;
        }

        long expiresAt = entry.ExpiresAt;
        return expiresAt == 0 ? -1 : Math.Max(0, expiresAt - Now);
    }

    /// <summary>Removes <paramref name="key"/>.</summary>
    /// <returns>Whether it was there, and had not expired.</returns>
    public bool Remove(ReadOnlySpan<byte> key)
    {
        if (!_byBytes.TryGetValue(key, out Entry? entry))
        {
            return false;
        }

        bool live = entry.MarkRemoved(Now);
        Unlink(entry);
        return live;
    }

    /// <summary>Adds 1 to the integer <paramref name="key"/> holds (0 when absent), keeping its expiry.</summary>
    /// <returns>Whether it was done, or why not; the new value in <paramref name="result"/>.</returns>
    public IncrementOutcome Increment(ReadOnlySpan<byte> key, out long result)
    {
        result = 0;
        while (true)
        {
            if (Find(key) is { } entry)
            {
                IncrementOutcome outcome = entry.TryIncrement(this, out result);
                if (outcome != IncrementOutcome.Removed)
                {
                    return outcome;
                }

                Unlink(entry);
                continue;
            }

            switch (TryAdd(key, "1"u8, expiresAt: 0))
            {
                case SetOutcome.Done:
                    result = 1;
                    return IncrementOutcome.Done;
                case SetOutcome.OutOfMemory:
                    return IncrementOutcome.OutOfMemory;
            }
        }
    }

    /// <summary>Stops the sweep; expired keys are then removed only when touched.</summary>
    public void Dispose() => _sweepTimer.Dispose();

    /// <summary>The live entry of <paramref name="key"/>, or <see langword="null"/>: one that has expired is removed on
    /// the way, as Redis expires a key lazily when it is touched.</summary>
    private Entry? Find(ReadOnlySpan<byte> key)
    {
        if (!_byBytes.TryGetValue(key, out Entry? entry))
        {
            return null;
        }

        long expiresAt = entry.ExpiresAt;
        long now;
        if (expiresAt == 0 || expiresAt > (now = Now))
        {
            return entry;
        }

        entry.TryMarkExpired(now);
        Unlink(entry); // whoever marked it, it goes now
        return null;
    }

    /// <summary>Adds a new key, if none is there and its bytes fit under the limit.</summary>
    /// <returns>Done, OutOfMemory, or <see langword="null"/> when another connection added the key meanwhile.</returns>
    private SetOutcome? TryAdd(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value, long expiresAt)
    {
        var entry = new Entry(key.ToArray(), value, expiresAt);
        if (!TryReserve(entry.Size))
        {
            return SetOutcome.OutOfMemory;
        }

        if (expiresAt != 0)
        {
            _expiring.TryAdd(entry, 0);
        }

        if (_entries.TryAdd(entry.Key, entry))
        {
            return SetOutcome.Done;
        }

        _expiring.TryRemove(entry, out _);
        Interlocked.Add(ref _usedMemory, -entry.Size);
        return null;
    }

    /// <summary>Takes <paramref name="bytes"/> from the limit, if they fit under it.</summary>
    private bool TryReserve(long bytes)
    {
        if (_maxMemory == 0)
        {
            Interlocked.Add(ref _usedMemory, bytes);
            return true;
        }

        long used = Volatile.Read(ref _usedMemory);
        while (true)
        {
            if (used + bytes > _maxMemory)
            {
                return false;
            }

            long seen = Interlocked.CompareExchange(ref _usedMemory, used + bytes, used);
            if (seen == used)
            {
                return true;
            }

            used = seen;
        }
    }

    /// <summary>Takes a removed entry out of the dictionary and its bytes out of the accounting, once, whoever calls.</summary>
    private void Unlink(Entry entry)
    {
        if (_entries.TryRemove(KeyValuePair.Create(entry.Key, entry)))
        {
            Interlocked.Add(ref _usedMemory, -entry.Size);
            if (entry.ExpiresAt != 0)
            {
                _expiring.TryRemove(entry, out _);
            }
        }
    }
}
