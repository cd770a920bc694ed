namespace PoolLib.Tests.SocketServers;

/// <summary>This process's CPU time, for tests that show a loop does not spin: a spinning thread uses a whole core.</summary>
internal static class ProcessCpu
{
    /// <summary>The CPU time this process uses over the next <paramref name="span"/>, all threads together.</summary>
    public static async Task<TimeSpan> UsedOverAsync(TimeSpan span, CancellationToken cancellationToken)
    {
        TimeSpan before = Environment.CpuUsage.TotalTime;
        await Task.Delay(span, cancellationToken);
        return Environment.CpuUsage.TotalTime - before;
    }
}
