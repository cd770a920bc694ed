namespace SocketServers.Resp;

internal sealed partial class RespStore
{
    /// <summary>Keys with an expiry looked at by each sweep batch.</summary>
    public const int SweepBatch = 200;

    /// <summary>The most batches of one tick.</summary>
    public const int SweepBatchesPerTick = 10;

    /// <summary>
    /// The active expiry, as Redis's: on each tick of the clock's timer, a batch of the keys with an expiry, resuming
    /// where the tick before stopped, and another batch while more than a quarter of the last one had expired, up to
    /// <see cref="SweepBatchesPerTick"/>. It holds the store weakly: a store dropped without being disposed stops it.
    /// </summary>
    private sealed class Sweeper
    {
        private readonly WeakReference<RespStore> _store;
        private ITimer? _timer;

        // Used only by the tick that holds _running.
        private IEnumerator<KeyValuePair<Entry, byte>>? _cursor;

        // 1 while a tick runs: a tick that comes while the last one runs skips.
        private int _running;

        private Sweeper(RespStore store) => _store = new WeakReference<RespStore>(store);

        public static ITimer Start(RespStore store, TimeProvider time)
        {
            var sweeper = new Sweeper(store);
            sweeper._timer = time.CreateTimer(static state => ((Sweeper)state!).Tick(), sweeper, SweepInterval, SweepInterval);
            return sweeper._timer;
        }

        private void Tick()
        {
            if (!_store.TryGetTarget(out RespStore? store))
            {
                Volatile.Read(ref _timer)?.Dispose();
                return;
            }

            if (Interlocked.Exchange(ref _running, 1) == 1)
            {
                return;
            }

            try
            {
                for (int batch = 0; batch < SweepBatchesPerTick && Sweep(store) > SweepBatch / 4; batch++)
                {
                }
            }
            finally
            {
                Volatile.Write(ref _running, 0);
            }
        }

        /// <summary>Looks at the next <see cref="SweepBatch"/> keys with an expiry; removes those expired.</summary>
        /// <returns>How many it removed.</returns>
        private int Sweep(RespStore store)
        {
            long now = store.Now;
            int removed = 0;
            for (int i = 0; i < SweepBatch; i++)
            {
                _cursor ??= store._expiring.GetEnumerator();
                if (!_cursor.MoveNext())
                {
                    _cursor.Dispose();
                    _cursor = null;
                    break; // the next batch starts over
                }

                Entry entry = _cursor.Current.Key;
                if (entry.TryMarkExpired(now))
                {
                    store.Unlink(entry);
                    store._expiring.TryRemove(entry, out _); // also when it was removed before it went in
                    removed++;
                }
            }

            return removed;
        }
    }
}
