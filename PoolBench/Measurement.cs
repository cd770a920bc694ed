namespace PoolBench;

/// <summary>
/// Runs one cell the way BenchmarkDotNet does, in small: optional calibration of the operation
/// count, warm-up runs that are thrown away, then several measured iterations. Before every run
/// the heap is collected and finalizers drained, so one cell's garbage is not paid for by the next.
/// </summary>
internal sealed class Measurement(int warmups, int iterations, TimeSpan targetIteration)
{
    public static Measurement For(bool quick) =>
        quick ? new Measurement(1, 3, TimeSpan.FromMilliseconds(20)) : new Measurement(1, 7, TimeSpan.FromMilliseconds(100));

    public int Iterations => iterations;

    /// <summary>Measures a cell whose size is fixed by the scenario (the article's request counts).</summary>
    public Sample Run(Func<RunResult> run)
    {
        for (int i = 0; i < warmups; i++)
        {
            Settle();
            run();
        }

        var runs = new RunResult[iterations];
        for (int i = 0; i < iterations; i++)
        {
            Settle();
            runs[i] = run();
        }

        return Sample.From(runs);
    }

    /// <summary>
    /// Measures a cell whose size is free: multiplies the operation count by four from <paramref name="minimum"/>
    /// until one run takes a quarter of the target iteration time, scales it to the target, then runs.
    /// </summary>
    public Sample RunCalibrated(long minimum, Func<long, RunResult> run)
    {
        long operations = minimum;
        const long Ceiling = 1L << 32;
        while (true)
        {
            Settle();
            TimeSpan elapsed = run(operations).Elapsed;
            if (elapsed >= targetIteration / 4 || operations >= Ceiling)
            {
                double scale = targetIteration / Max(elapsed, TimeSpan.FromTicks(1));
                operations = Math.Clamp((long)(operations * scale), minimum, Ceiling);
                break;
            }

            operations *= 4;
        }

        return Run(() => run(operations));
    }

    private static TimeSpan Max(TimeSpan a, TimeSpan b) => a > b ? a : b;

    private static void Settle()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
    }
}
