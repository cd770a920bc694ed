using Microsoft.Extensions.Time.Testing;

namespace PoolLib.Tests.Fakes;

/// <summary>A <see cref="FakeTimeProvider"/> that keeps every timer it makes, to see whether it was disposed.</summary>
internal sealed class TimerRecordingTimeProvider : FakeTimeProvider
{
    public List<RecordedTimer> Timers { get; } = [];

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        var timer = new RecordedTimer(base.CreateTimer(callback, state, dueTime, period));
        Timers.Add(timer);
        return timer;
    }

    /// <summary>A timer that remembers whether it was disposed.</summary>
    internal sealed class RecordedTimer(ITimer inner) : ITimer
    {
        public bool IsDisposed { get; private set; }

        public bool Change(TimeSpan dueTime, TimeSpan period) => inner.Change(dueTime, period);

        public void Dispose()
        {
            IsDisposed = true;
            inner.Dispose();
        }

        public ValueTask DisposeAsync()
        {
            Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
