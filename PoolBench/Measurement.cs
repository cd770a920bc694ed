using System.Diagnostics;
using System.Runtime;

namespace PoolBench;

/// <summary>
/// Runs one cell the way BenchmarkDotNet does, in small: a JIT stage, optional calibration of the
/// operation count, warm-up runs that are thrown away, then several measured iterations. Before
/// every run the heap is collected and finalizers drained, so one cell's garbage is not paid for by the next.
/// </summary>
/// <remarks>
/// The JIT stage repeats a small run of the cell until the JIT has compiled nothing for a while, so
/// that every measured run executes the cell's fully optimised (tier-1) code. Without it, a loop
/// that runs once per measured run starts in unoptimised code and is patched on the fly (on-stack
/// replacement), and which code the measured runs got depended on when the runtime's background
/// tiering happened to run: the article's one-thread pool column moved between about 8.5 and
/// 10.5 ns a request from one process to the next, with the same build.
/// </remarks>
internal sealed class Measurement(int warmups, int iterations, TimeSpan targetIteration, TimeSpan jitQuietPeriod)
{
    // Bounds the JIT stage of one cell if something keeps compiling (a background thread, a logger).
    private static readonly TimeSpan s_jitStageLimit = TimeSpan.FromSeconds(5);

    /// <summary>
    /// The full settings, or the quick ones for a smoke run. Half a second without a compilation
    /// covers the runtime's 100 ms wait after the last unoptimised compilation before it counts
    /// calls, then the 30 calls, the instrumented tier and the tier-1 compilation in the background.
    /// The quick run skips the JIT stage.
    /// </summary>
    public static Measurement For(bool quick) =>
        quick
            ? new Measurement(1, 3, TimeSpan.FromMilliseconds(20), TimeSpan.Zero)
            : new Measurement(1, 7, TimeSpan.FromMilliseconds(100), TimeSpan.FromMilliseconds(500));

    public int Iterations => iterations;

    /// <summary>Measures a cell whose size is fixed by the scenario (the article's request counts).</summary>
    /// <param name="run">One measured run of the cell.</param>
    /// <param name="jitRun">A small run of the same cell, repeated by the JIT stage.</param>
    public Sample Run(Func<RunResult> run, Func<RunResult> jitRun)
    {
        SettleJit(jitRun);
        return RunSettled(run);
    }

    private Sample RunSettled(Func<RunResult> run)
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
        SettleJit(() => run(minimum));
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

        return RunSettled(() => run(operations));
    }

    /// <summary>Repeats <paramref name="jitRun"/> until the JIT has compiled no method for the quiet period (see the remarks on the class).</summary>
    private void SettleJit(Func<RunResult> jitRun)
    {
        long start = Stopwatch.GetTimestamp();
        long quietSince = start;
        long compiled = JitInfo.GetCompiledMethodCount();
        while (Stopwatch.GetElapsedTime(quietSince) < jitQuietPeriod && Stopwatch.GetElapsedTime(start) < s_jitStageLimit)
        {
            jitRun();
            long now = JitInfo.GetCompiledMethodCount();
            if (now != compiled)
            {
                compiled = now;
                quietSince = Stopwatch.GetTimestamp();
            }
        }
    }

    private static TimeSpan Max(TimeSpan a, TimeSpan b) => a > b ? a : b;

    private static void Settle()
    {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.Collect();
    }
}
