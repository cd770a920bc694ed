namespace PoolLib.Tests;

/// <summary>Waits for a condition that has no event to wait on (a counter), checking it every few ms.</summary>
internal static class Poll
{
    private static readonly TimeSpan s_interval = TimeSpan.FromMilliseconds(10);

    public static async Task UntilAsync(Func<bool> condition, CancellationToken cancellationToken)
    {
        while (!condition())
        {
            await Task.Delay(s_interval, cancellationToken);
        }
    }

    /// <summary>Waits for a condition that takes a round trip to check (a server's count of its clients).</summary>
    public static async Task UntilAsync(Func<Task<bool>> condition, CancellationToken cancellationToken)
    {
        while (!await condition())
        {
            await Task.Delay(s_interval, cancellationToken);
        }
    }
}
