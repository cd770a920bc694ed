using SocketServers.Internal;

namespace SocketServers.Tests;

/// <summary>The limiter runs on a clock the tests move by hand, so every window boundary is exact.</summary>
public sealed class LogRateLimiterTests
{
    private static readonly TimeSpan s_window = TimeSpan.FromSeconds(1);

    private long _now = 5_000;

    [TestCase(0)]
    [TestCase(LogRateLimiter.MaxLinesPerWindow + 1)]
    public void Constructor_LinesPerWindowOutOfRange_ThrowsNamingIt(int linesPerWindow)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new LogRateLimiter(linesPerWindow, s_window));

        Assert.That(exception!.ParamName, Is.EqualTo("linesPerWindow"));
    }

    [TestCase(0)]
    [TestCase(-1)]
    public void Constructor_WindowUnderOneMillisecond_ThrowsNamingIt(int ticks)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new LogRateLimiter(3, TimeSpan.FromTicks(ticks)));

        Assert.That(exception!.ParamName, Is.EqualTo("window"));
    }

    [Test]
    public void TryAcquire_UpToTheLimitInOneWindow_LetsEachThroughWithNothingSuppressed()
    {
        LogRateLimiter limiter = Create(linesPerWindow: 3);

        bool[] letThrough = [Acquire(limiter, out long first), Acquire(limiter, out long second), Acquire(limiter, out long third)];

        Assert.That(letThrough, Is.All.True);
        Assert.That(new[] { first, second, third }, Is.All.Zero);
    }

    [Test]
    public void TryAcquire_OverTheLimitInOneWindow_Refused()
    {
        LogRateLimiter limiter = Create(linesPerWindow: 3);
        AcquireTimes(limiter, 3);
        _now += 999;

        bool letThrough = limiter.TryAcquire(out long suppressed);

        Assert.That(letThrough, Is.False);
        Assert.That(suppressed, Is.Zero);
    }

    [Test]
    public void TryAcquire_FirstCallOfTheNextWindow_LetThroughWithTheCountSuppressed()
    {
        LogRateLimiter limiter = Create(linesPerWindow: 3);
        int letThrough = AcquireTimes(limiter, 40);
        _now += 1_000;

        bool next = limiter.TryAcquire(out long suppressed);
        bool after = limiter.TryAcquire(out long suppressedAfter);

        Assert.That(letThrough, Is.EqualTo(3));
        Assert.That(next, Is.True);
        Assert.That(suppressed, Is.EqualTo(37));
        Assert.That(after, Is.True);
        Assert.That(suppressedAfter, Is.Zero, "each refused call is reported once");
    }

    [Test]
    public void TryAcquire_AfterAQuietSpell_WindowStartsAtTheFirstCall()
    {
        // The first window is [5000, 6000); after it, nothing until 7500, which opens [7500, 8500).
        LogRateLimiter limiter = Create(linesPerWindow: 2);
        AcquireTimes(limiter, 2);
        _now = 7_500;
        AcquireTimes(limiter, 2);

        _now = 8_499;
        bool lastMillisecond = limiter.TryAcquire(out _);
        _now = 8_500;
        bool nextWindow = limiter.TryAcquire(out long suppressed);

        Assert.That(lastMillisecond, Is.False, "the window that started at 7500 is still full");
        Assert.That(nextWindow, Is.True);
        Assert.That(suppressed, Is.EqualTo(1));
    }

    [Test]
    public void TryAcquire_Refused_AllocatesNothing()
    {
        LogRateLimiter limiter = Create(linesPerWindow: 1);
        AcquireTimes(limiter, 10);

        long before = GC.GetAllocatedBytesForCurrentThread();
        int letThrough = AcquireTimes(limiter, 10_000);
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.That(letThrough, Is.Zero);
        Assert.That(allocated, Is.Zero);
    }

    [TestCase(0, "")]
    [TestCase(37, " (37 similar suppressed since the last one)")]
    public void SuppressedNote_Count_SaysHowManyOrNothing(long suppressed, string expected)
    {
        Assert.That(LogRateLimiter.SuppressedNote(suppressed), Is.EqualTo(expected));
    }

    [Test]
    [CancelAfter(60_000)]
    public void TryAcquire_ManyThreadsAcrossWindows_NoMoreLinesThanWindowsAllowAndEveryRefusalReportedOnce(CancellationToken cancellationToken)
    {
        // The clock moves one millisecond every 16 calls, whichever thread makes them, so the threads race both for
        // the lines of a window and to open the next. A window opens only a window's length after the last one on
        // the clock, so the run has room for at most (its clock span / window + 1) windows, each with its lines; with
        // 160 calls per window every window fills, and a single extra line anywhere shows.
        const int Threads = 4;
        const int CallsPerThread = 50_000;
        const int CallsPerMillisecond = 16;
        const int LinesPerWindow = 3;
        const int WindowMilliseconds = 10;
        long calls = 0;
        var limiter = new LogRateLimiter(LinesPerWindow, TimeSpan.FromMilliseconds(WindowMilliseconds), new MillisecondClock(new Timestamps(() => Interlocked.Read(ref calls) / CallsPerMillisecond)));
        long letThrough = 0;
        long reported = 0;
        using var start = new Barrier(Threads);

        void Run()
        {
            start.SignalAndWait(cancellationToken);
            for (int i = 0; i < CallsPerThread; i++)
            {
                Interlocked.Increment(ref calls);
                if (limiter.TryAcquire(out long suppressed))
                {
                    Interlocked.Increment(ref letThrough);
                    Interlocked.Add(ref reported, suppressed);
                }
            }
        }

        Task[] workers = Enumerable.Range(0, Threads)
            .Select(_ => Task.Factory.StartNew(Run, cancellationToken, TaskCreationOptions.LongRunning, TaskScheduler.Default))
            .ToArray();
        Assert.That(Task.WaitAll(workers, TimeSpan.FromSeconds(50)), Is.True, "the workers finished");
        long clockSpan = (long)Threads * CallsPerThread / CallsPerMillisecond;
        Interlocked.Add(ref calls, WindowMilliseconds * CallsPerMillisecond);
        Assert.That(limiter.TryAcquire(out long lastReport), Is.True, "the window after the run lets a line through");

        long refused = ((long)Threads * CallsPerThread) - letThrough;
        Assert.That(letThrough, Is.LessThanOrEqualTo(((clockSpan / WindowMilliseconds) + 1) * LinesPerWindow));
        Assert.That(reported + lastReport, Is.EqualTo(refused), "every refused call is reported exactly once");
    }

    private LogRateLimiter Create(int linesPerWindow) => new(linesPerWindow, s_window, new MillisecondClock(new Timestamps(() => _now)));

    private static bool Acquire(LogRateLimiter limiter, out long suppressed) => limiter.TryAcquire(out suppressed);

    /// <returns>How many of <paramref name="count"/> calls were let through.</returns>
    private static int AcquireTimes(LogRateLimiter limiter, int count)
    {
        int letThrough = 0;
        for (int i = 0; i < count; i++)
        {
            if (limiter.TryAcquire(out _))
            {
                letThrough++;
            }
        }

        return letThrough;
    }
}
