using Microsoft.Extensions.Time.Testing;

namespace SocketServers.Tests;

/// <summary>A clock the test moves by hand, as <see cref="FakeTimeProvider"/>, that a test can make fail: after
/// <see cref="FailNextRead"/>, the next read of its timestamp throws, as any code a server runs may throw
/// unexpectedly. It counts the timers made on it, so that a test can wait for a loop to start (again).</summary>
internal sealed class FaultyTimeProvider : FakeTimeProvider
{
    private int _armed;
    private int _failures;
    private int _timersCreated;

    /// <summary>Gets how many reads have thrown.</summary>
    public int Failures => Volatile.Read(ref _failures);

    /// <summary>Gets how many timers have been made on this clock.</summary>
    public int TimersCreated => Volatile.Read(ref _timersCreated);

    /// <summary>Makes the next read of the timestamp, and that one only, throw <see cref="InvalidOperationException"/>.</summary>
    public void FailNextRead() => Volatile.Write(ref _armed, 1);

    public override long GetTimestamp()
    {
        if (Interlocked.Exchange(ref _armed, 0) == 1)
        {
            Interlocked.Increment(ref _failures);
            throw new InvalidOperationException("injected clock fault");
        }

        return base.GetTimestamp();
    }

    public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period)
    {
        Interlocked.Increment(ref _timersCreated);
        return base.CreateTimer(callback, state, dueTime, period);
    }
}
