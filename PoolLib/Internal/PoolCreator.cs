namespace PoolLib.Internal;

/// <summary>
/// A pool's background creations: bounded (<see cref="PoolOptions.MaxConcurrentCreations"/>), timed
/// (<see cref="PoolOptions.CreateTimeout"/>) and tied to no taker: each is started because the waiters, and the
/// objects <see cref="PoolOptions.MinIdle"/> lacks, outnumber the creations in flight, and its object is stored
/// as a release stores one, so that it serves the oldest waiter or goes idle. After a failure the creator backs
/// off: while it does, a waiter that needs a creation, and the cap has room for, fails at once with the last
/// failure, oldest first; once the back-off ends one creation probes, and its success restores the full bound.
/// No user code runs under its lock; creations run on the thread pool.
/// </summary>
internal sealed class PoolCreator<T> : IDisposable where T : class
{
    // The first back-off after a failure; each failure in a row doubles it, up to the longest.
    private static readonly TimeSpan s_firstBackoff = TimeSpan.FromMilliseconds(100);
    private static readonly TimeSpan s_longestBackoff = TimeSpan.FromSeconds(5);

    private readonly Pool<T> _pool;
    private readonly TimeProvider _time;
    private readonly TimeSpan? _timeout;
    private readonly int _maxInFlight;
    private readonly int _minIdle;
    private readonly bool _servesWaiters;

    // Cancelled when the pool is disposed: every creation's token follows it.
    private readonly CancellationTokenSource _stopping = new();

    // Guards the fields below it; held for counting only, never across user code or another lock.
    private readonly Lock _lock = new();

    // Creations started and not yet finished; each holds one unit of the cap.
    private int _inFlight;

    // Failures since the last success, the last of them, and when the back-off after it ends (TimeProvider units).
    private int _failures;
    private Exception? _lastFailure;
    private long _retryAt;

    // Whether MinIdle is kept filled (set once filling has begun), and whether the retry timer is armed.
    private bool _filling;
    private bool _retryArmed;

    // Resumes filling once a back-off ends; made on first use.
    private ITimer? _retryTimer;

    /// <summary>Makes the creations of <paramref name="pool"/>.</summary>
    /// <param name="pool">The pool.</param>
    /// <param name="options">Its options, already checked.</param>
    /// <param name="servesWaiters">Whether takers wait for these creations (an asynchronous pool), or make their own and these only fill MinIdle.</param>
    /// <param name="fillsMinIdle">Whether MinIdle is kept filled.</param>
    public PoolCreator(Pool<T> pool, PoolOptions options, bool servesWaiters, bool fillsMinIdle)
    {
        _pool = pool;
        _time = options.TimeProvider ?? TimeProvider.System;
        _timeout = options.CreateTimeout;
        _maxInFlight = options.MaxConcurrentCreations;
        _servesWaiters = servesWaiters;
        _minIdle = fillsMinIdle ? options.MinIdle : 0;
    }

    /// <summary>Begins keeping MinIdle filled, if the pool does; called once construction is over.</summary>
    public void StartFilling()
    {
        if (_minIdle == 0 || Volatile.Read(ref _filling))
        {
            return;
        }

        lock (_lock)
        {
            _filling = true;
        }

        Pump();
    }

    /// <summary>
    /// Starts the creations that the waiters, <paramref name="extra"/> more takers and the objects MinIdle lacks call
    /// for, within the bound and the cap; or, while backing off, fails the waiters that would need one.
    /// </summary>
    public void Pump(int extra = 0)
    {
        int lacking = Volatile.Read(ref _filling) ? Math.Max(0, _minIdle - _pool.AvailableCount) : 0;
        int started = 0;
        int toFail = 0;
        bool arm = false;
        Exception? failure = null;
        lock (_lock)
        {
            if (_stopping.IsCancellationRequested)
            {
                return;
            }

            int waiters = _servesWaiters ? _pool.WaiterCount : 0;
            int wanted = waiters + extra + lacking - _inFlight;
            if (_failures != 0 && _time.GetTimestamp() < _retryAt)
            {
                // Takers that need a creation the cap has room for; the others wait for releases.
                toFail = Math.Min(waiters - _inFlight, _pool.FreeUnits);
                failure = _lastFailure;
                arm = lacking > 0 && !_retryArmed;
                _retryArmed |= arm;
            }
            else
            {
                // One probe at a time until a creation succeeds again.
                int bound = _failures == 0 ? _maxInFlight : 1;
                while (wanted > 0 && _inFlight < bound && _pool.TryTakeUnit())
                {
                    _inFlight++;
                    wanted--;
                    started++;
                }
            }
        }

        for (int i = 0; i < started; i++)
        {
            ThreadPool.UnsafeQueueUserWorkItem(static creator => _ = creator.CreateOneAsync(), this, preferLocal: false);
        }

        if (toFail > 0)
        {
            _pool.Waiters.FailOldest(toFail, failure!);
        }

        if (arm)
        {
            ArmRetryTimer();
        }
    }

    public void Dispose()
    {
        _stopping.Cancel();
        _retryTimer?.Dispose();
    }

    /// <summary>Makes one object with a unit of the cap already taken, and stores it or records the failure; never throws.</summary>
    private async Task CreateOneAsync()
    {
        Exception? failure = null;
        bool timedOut = false;
        T? created = null;

        // A Clear that begins while the object is made cannot see it: its registration retires it then.
        int retirements = _pool.Registry.Retirements;
        CancellationTokenSource? timeout = _timeout is { } span ? new CancellationTokenSource(span, _time) : null;
        CancellationTokenRegistration stop = timeout is null
            ? default
            : _stopping.Token.UnsafeRegister(static state => ((CancellationTokenSource)state!).Cancel(), timeout);
        try
        {
            created = await _pool.Lifecycle.ConstructAsync(timeout?.Token ?? _stopping.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException canceled) when (timeout is { IsCancellationRequested: true } && !_stopping.IsCancellationRequested)
        {
            timedOut = true;
            failure = new TimeoutException($"The pool '{_pool.Name}' could not make an object within its CreateTimeout of {_timeout}.", canceled);
        }
        catch (Exception thrown)
        {
            failure = thrown;
        }
        finally
        {
            stop.Dispose();
            timeout?.Dispose();
        }

        bool unitGone = false;
        if (failure is null)
        {
            try
            {
                _pool.Lifecycle.AddCreated(created!, retirements);
            }
            catch (Exception thrown)
            {
                // HoldSlotInObject threw: the object is discarded and its unit given back there.
                failure = thrown;
                unitGone = true;
            }
        }

        Finish(failure, timedOut, unitGone);
    }

    private void Finish(Exception? failure, bool timedOut, bool unitGone)
    {
        lock (_lock)
        {
            _inFlight--;
            if (failure is null)
            {
                _failures = 0;
                _lastFailure = null;
            }
            else
            {
                _failures++;
                _lastFailure = failure;
                _retryAt = _time.GetTimestamp() + Backoff(_failures);
            }
        }

        if (failure is null)
        {
            Pump();
            return;
        }

        if (!_stopping.IsCancellationRequested)
        {
            PoolMetrics.CreateFailed(_pool.Name, timedOut);
        }

        if (unitGone)
        {
            Pump();
        }
        else
        {
            // Serves and pumps again: the failure just recorded fails the waiter it leaves without a creation.
            _pool.ReturnUnit();
        }
    }

    /// <summary>Arms the timer that pumps again once the back-off ends; outside the lock, since a timer may fire at once.</summary>
    private void ArmRetryTimer()
    {
        TimeSpan due;
        lock (_lock)
        {
            due = _time.GetElapsedTime(_time.GetTimestamp(), _retryAt);
        }

        _retryTimer ??= _time.CreateTimer(
            static state =>
            {
                var creator = (PoolCreator<T>)state!;
                lock (creator._lock)
                {
                    creator._retryArmed = false;
                }

                creator.Pump();
            },
            this,
            Timeout.InfiniteTimeSpan,
            Timeout.InfiniteTimeSpan);
        if (!_stopping.IsCancellationRequested)
        {
            _retryTimer.Change(due > TimeSpan.Zero ? due : TimeSpan.Zero, Timeout.InfiniteTimeSpan);
        }
    }

    /// <summary>The back-off after <paramref name="failures"/> failures in a row, in TimeProvider units.</summary>
    private long Backoff(int failures)
    {
        TimeSpan backoff = failures > 6 ? s_longestBackoff : TimeSpan.FromTicks(Math.Min(s_longestBackoff.Ticks, s_firstBackoff.Ticks << (failures - 1)));
        return (long)(backoff.TotalSeconds * _time.TimestampFrequency);
    }
}
