namespace SocketServers.Internal;

/// <summary>Milliseconds from a monotonic clock, as a server's timeouts, rates and log limits read them: the
/// <see cref="TimeProvider"/>'s timestamp, or <see cref="Environment.TickCount64"/> read directly for the system's.</summary>
/// <remarks>Thread safety: immutable; <see cref="Now"/> may be read from any thread.</remarks>
internal sealed class MillisecondClock
{
    // Null for the system's provider, whose TickCount64 costs less than a timestamp and a division.
    private readonly TimeProvider? _time;
    private readonly long _ticksPerMillisecond;

    /// <summary>Creates a clock on <paramref name="time"/>.</summary>
    public MillisecondClock(TimeProvider time)
    {
        ArgumentNullException.ThrowIfNull(time);
        if (time != TimeProvider.System)
        {
            _time = time;
            _ticksPerMillisecond = Math.Max(1, time.TimestampFrequency / 1000);
        }
    }

    /// <summary>Gets the system's clock.</summary>
    public static MillisecondClock System { get; } = new(TimeProvider.System);

    /// <summary>Gets the clock now, in milliseconds; 0 or more, never moving back.</summary>
    public long Now => _time is null ? Environment.TickCount64 : _time.GetTimestamp() / _ticksPerMillisecond;
}
