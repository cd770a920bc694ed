namespace PoolLib.Tests.Fakes;

/// <summary>
/// A clock that moves only when told, whose timers fire only when <see cref="Tick"/> is called, on the
/// caller's thread: so a test can run one timer tick while another is still in its callback.
/// </summary>
internal sealed class ManualTimeProvider : TimeProvider
{
    private readonly List<(TimerCallback Callback, object? State)> _timers = [];

    // Not 0, which the pool's idle stamps take for "not seen yet".
    private long _now = TimeSpan.TicksPerHour;

    public override long TimestampFrequency => TimeSpan.TicksPerSecond;

    public override long GetTimestamp() => Volatile.Read(ref _now);

    public void Advance(TimeSpan delta) => Interlocked.Add(ref _now, delta.Ticks);

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        lock (_timers)
        {
            _timers.Add((callback, state));
        }

        return new InertTimer();
    }

    /// <summary>Runs every timer's callback once, on the calling thread.</summary>
    public void Tick()
    {
        (TimerCallback Callback, object? State)[] timers;
        lock (_timers)
        {
            timers = [.. _timers];
        }

        foreach ((TimerCallback callback, object? state) in timers)
        {
            callback(state);
        }
    }

    /// <summary>A timer that never fires by itself.</summary>
    private sealed class InertTimer : ITimer
    {
        public bool Change(TimeSpan dueTime, TimeSpan period) => true;

        public void Dispose()
        {
        }

        public ValueTask DisposeAsync() => ValueTask.CompletedTask;
    }
}
