namespace SocketServers.Tests;

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

    /// <summary>The cores this process keeps busy, on average, in each of <paramref name="windows"/> consecutive windows
    /// of at least <paramref name="window"/> (1 is one core busy all the time). A spinning loop fills every window; what
    /// else the process does (the JIT compiling a path the test just reached, a collection, the test host) comes in
    /// bursts, so the least of them shows the loop.</summary>
    public static async Task<double[]> CoresUsedPerWindowAsync(TimeSpan window, int windows, CancellationToken cancellationToken)
    {
        var used = new double[windows];
        for (int i = 0; i < windows; i++)
        {
            // Per elapsed time rather than per window: a spinning thread on a busy core can make the delay run long.
            long start = System.Diagnostics.Stopwatch.GetTimestamp();
            TimeSpan cpu = await UsedOverAsync(window, cancellationToken);
            used[i] = cpu / System.Diagnostics.Stopwatch.GetElapsedTime(start);
        }

        return used;
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
