namespace PoolLib.Tests.SocketServers;

/// <summary>This process's CPU time, for tests that show a loop does not spin: a spinning thread uses a whole core.</summary>
internal static class ProcessCpu
{
    private static readonly TimeSpan s_quietWindow = TimeSpan.FromMilliseconds(250);

    /// <summary>The CPU time this process uses over the next <paramref name="span"/>, all threads together.</summary>
    public static async Task<TimeSpan> UsedOverAsync(TimeSpan span, CancellationToken cancellationToken)
    {
        TimeSpan before = Environment.CpuUsage.TotalTime;
        await Task.Delay(span, cancellationToken);
        return Environment.CpuUsage.TotalTime - before;
    }

    /// <summary>Waits until the process uses less than a tenth of a core over a quarter of a second: what earlier tests
    /// left running (the JIT recompiling their hot code, a collection) is done before a measurement starts.</summary>
    public static async Task WaitUntilQuietAsync(CancellationToken cancellationToken)
    {
        while (await UsedOverAsync(s_quietWindow, cancellationToken) >= s_quietWindow / 10)
        {
        }
    }
}
