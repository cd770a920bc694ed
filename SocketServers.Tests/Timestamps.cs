namespace SocketServers.Tests;

/// <summary>A time whose timestamps, in milliseconds, the test computes.</summary>
internal sealed class Timestamps(Func<long> milliseconds) : TimeProvider
{
    public override long TimestampFrequency => 1000;

    public override long GetTimestamp() => milliseconds();
}
