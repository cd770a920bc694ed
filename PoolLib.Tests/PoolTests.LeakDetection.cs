using System.Diagnostics;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.ObjectPool;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Leak detection: a rental held past the threshold is reported once, with where it was taken if it was
// sampled, and said once to have come back; a take that is not sampled reads no clock and keeps no trace.
public sealed partial class PoolTests
{
    private static readonly TimeSpan s_leakThreshold = TimeSpan.FromMinutes(1);

    [Test]
    public void RentalLeakSuspected_SampledRentalHeldPastThreshold_RaisedOnceWithNameTimeAndTrace()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = "leaky", LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = 1, TimeProvider = time });
        var reports = new List<PoolLeakEventArgs>();
        pool.RentalLeakSuspected += (sender, args) => reports.Add(args);
        PoolSlot<TrackedObject> slot = TakeForLeakTest(pool);

        AdvanceInTicks(time, s_leakThreshold + s_idleTick);
        AdvanceInTicks(time, 4 * s_leakThreshold);

        Assert.That(reports, Has.Count.EqualTo(1));
        Assert.That(reports[0].PoolName, Is.EqualTo("leaky"));
        Assert.That(reports[0].HeldFor, Is.GreaterThanOrEqualTo(s_leakThreshold));
        Assert.That(reports[0].StackTrace?.ToString(), Does.Contain(nameof(TakeForLeakTest)));
        pool.Release(slot);
    }

    [Test]
    public void RentalLeakSuspected_UnsampledRentalHeldPastThreshold_RaisedWithoutTraceAndSaysSo()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = "leaky", LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = 1_000, TimeProvider = time });
        var reports = new List<PoolLeakEventArgs>();
        pool.RentalLeakSuspected += (sender, args) => reports.Add(args);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        AdvanceInTicks(time, 2 * s_leakThreshold);

        Assert.That(reports, Has.Count.EqualTo(1));
        Assert.That(reports[0].StackTrace, Is.Null);
        Assert.That(reports[0].HeldFor, Is.GreaterThanOrEqualTo(s_leakThreshold));
        Assert.That(reports[0].ToString(), Does.Contain("not one of the rentals sampled"));
        pool.Release(slot);
    }

    [Test]
    public void RentalLeakSuspected_RentalHeldJustUnderThresholdAcrossTicks_NotRaisedEarly()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = 1, TimeProvider = time });
        var reports = new List<PoolLeakEventArgs>();
        pool.RentalLeakSuspected += (sender, args) => reports.Add(args);
        time.Advance(s_idleTick / 2);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        // Ticks at 15 s to 60 s, when the rental, taken at 7.5 s, is 52.5 s old.
        time.Advance(s_idleTick / 2);
        AdvanceInTicks(time, s_leakThreshold - s_idleTick);

        Assert.That(reports, Is.Empty, "held less than the threshold at every tick so far");
        time.Advance(s_idleTick);
        Assert.That(reports, Has.Count.EqualTo(1));
        Assert.That(reports[0].HeldFor, Is.GreaterThanOrEqualTo(s_leakThreshold));
        pool.Release(slot);
    }

    [TestCase(nameof(TakeSlotForTrace))]
    [TestCase(nameof(TryTakeSlotForTrace))]
    [TestCase(nameof(TimedTakeForTrace))]
    [TestCase(nameof(AsyncTakeForTrace))]
    [TestCase(nameof(ObjectPoolGetForTrace))]
    public void RentalLeakSuspected_EveryRentalSampled_TraceStartsAtTheCallersFrame(string caller)
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = 1, TimeProvider = time });
        var reports = new List<PoolLeakEventArgs>();
        pool.RentalLeakSuspected += (sender, args) => reports.Add(args);
        pool.Release(pool.TakeSlot());
        PoolSlot<TrackedObject> slot = caller switch
        {
            nameof(TakeSlotForTrace) => TakeSlotForTrace(pool),
            nameof(TryTakeSlotForTrace) => TryTakeSlotForTrace(pool),
            nameof(TimedTakeForTrace) => TimedTakeForTrace(pool),
            nameof(AsyncTakeForTrace) => AsyncTakeForTrace(pool),
            _ => ObjectPoolGetForTrace(pool),
        };

        AdvanceInTicks(time, 2 * s_leakThreshold);

        Assert.That(reports, Has.Count.EqualTo(1));
        StackFrame first = reports[0].StackTrace!.GetFrame(0)!;
        Assert.That(first.GetMethod()!.Name, Is.EqualTo(caller), reports[0].StackTrace!.ToString());
        pool.Release(slot);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static PoolSlot<TrackedObject> TakeSlotForTrace(Pool<TrackedObject> pool) => pool.TakeSlot();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static PoolSlot<TrackedObject> TryTakeSlotForTrace(Pool<TrackedObject> pool) => pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot) ? slot : throw new InvalidOperationException("no object");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static PoolSlot<TrackedObject> TimedTakeForTrace(Pool<TrackedObject> pool) => pool.TryTakeSlot(TimeSpan.FromSeconds(1), out PoolSlot<TrackedObject>? slot) ? slot : throw new InvalidOperationException("no object");

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static PoolSlot<TrackedObject> AsyncTakeForTrace(Pool<TrackedObject> pool) => pool.TakeSlotAsync().AsTask().GetAwaiter().GetResult();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static PoolSlot<TrackedObject> ObjectPoolGetForTrace(Pool<TrackedObject> pool)
    {
        TrackedObject taken = pool.AsObjectPool(waitWhileExhausted: true).Get();
        return pool.Registry.Slots.ToArray().Single(slot => slot is not null && ReferenceEquals(slot.Object, taken))!;
    }

    [TestCase(4, new[] { false, false, false, true, false, false, false, true })]
    [TestCase(1, new[] { true, true, true, true })]
    [TestCase(0, new[] { false, false, false, false, false })]
    public void LeakSamplingInterval_TakesOnOneThread_EveryNthRecordsWhereItWasTaken(int interval, bool[] expected)
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = interval, TimeProvider = new FakeTimeProvider() });
        var traced = new List<bool>();

        for (int take = 0; take < expected.Length; take++)
        {
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            traced.Add(slot.History!.TracedRental == slot.Rental);
            pool.Release(slot);
        }

        Assert.That(traced, Is.EqualTo(expected));
    }

    [Test]
    public void LeakSamplingInterval_DefaultAndTakesRare_TracesEveryTake()
    {
        var time = new SteppingTimeProvider(TimeSpan.FromMicroseconds(5));
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        var traced = new List<bool>();

        for (int take = 0; take < 20; take++)
        {
            // A take a second: a trace of 5 us is far below 1 % of that.
            time.Advance(TimeSpan.FromSeconds(1));
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            traced.Add(slot.History!.TracedRental == slot.Rental);
            pool.Release(slot);
        }

        Assert.That(traced, Is.All.True);
    }

    [Test]
    public void LeakSamplingInterval_DefaultAndTakesFrequent_TracesAboutOneTakeInHundredTimesTheTraceCost()
    {
        // Each read of the clock moves it 1 us, so a trace (read before and after) costs 1 us; the thread takes every 1 us.
        var time = new SteppingTimeProvider(TimeSpan.FromMicroseconds(1));
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        pool.Release(pool.TakeSlot()); // the object's creation reads the clock too
        int readsBefore = time.Reads;
        int traced = 0;

        for (int take = 0; take < 5_000; take++)
        {
            time.Advance(TimeSpan.FromMicroseconds(1));
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            traced += slot.History!.TracedRental == slot.Rental ? 1 : 0;
            pool.Release(slot);
        }

        // Tracing at 1 % of the thread's time: about one take in a hundred, the first takes (whose rate is unknown) traced too.
        Assert.That(traced, Is.InRange(40, 60));
        Assert.That(time.Reads - readsBefore, Is.EqualTo(3 * traced), "the clock is read only by a traced take: before and after its trace, and to stamp it");
    }

    [Test]
    public void LeakSamplingInterval_DefaultAfterABurst_TracesEveryTakeAgainOnceTheBurstsIntervalHasPassed()
    {
        var time = new SteppingTimeProvider(TimeSpan.FromMicroseconds(1));
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        for (int take = 0; take < 1_000; take++)
        {
            pool.Release(pool.TakeSlot());
        }

        var traced = new List<bool>();
        for (int take = 0; take < 3_000; take++)
        {
            time.Advance(TimeSpan.FromSeconds(1));
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            traced.Add(slot.History!.TracedRental == slot.Rental);
            pool.Release(slot);
        }

        int firstTraced = traced.IndexOf(true);
        Assert.That(firstTraced, Is.GreaterThan(0), "the burst set a long interval, which a quiet thread finishes before its clock is read");
        Assert.That(traced.Skip(firstTraced), Is.All.True);
    }

    [Test]
    public void LeakedRentalReturned_ReportedRentalReleased_RaisedOnceAndCounted()
    {
        using var returnedCount = new MetricCollector<long>(null, "PoolLib", "pool.leaks.returned");
        using var reportedCount = new MetricCollector<long>(null, "PoolLib", "pool.leaks.reported");
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = 1, TimeProvider = time });
        var returned = new List<PoolLeakEventArgs>();
        pool.LeakedRentalReturned += (sender, args) => returned.Add(args);
        PoolSlot<TrackedObject> leaked = pool.TakeSlot();
        PoolSlot<TrackedObject> released = pool.TakeSlot();
        AdvanceInTicks(time, 2 * s_leakThreshold);
        Assert.That(returned, Is.Empty, "still out");

        pool.Release(leaked);
        AdvanceInTicks(time, 2 * s_leakThreshold);
        pool.Release(released);
        AdvanceInTicks(time, 2 * s_leakThreshold);

        Assert.That(returned, Has.Count.EqualTo(2));
        Assert.That(returned.Select(args => args.HeldFor), Is.All.GreaterThanOrEqualTo(2 * s_leakThreshold));
        Assert.That(returned.Select(args => args.StackTrace), Is.All.Not.Null);
        Assert.That(Sum(reportedCount, pool.Name), Is.EqualTo(2));
        Assert.That(Sum(returnedCount, pool.Name), Is.EqualTo(2));
    }

    [Test]
    public void LeakedRentalReturned_RentalNeverReported_NotRaised()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        int returned = 0;
        pool.LeakedRentalReturned += (sender, args) => returned++;
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        AdvanceInTicks(time, s_leakThreshold / 2);

        pool.Release(slot);
        AdvanceInTicks(time, 4 * s_leakThreshold);

        Assert.That(returned, Is.Zero);
    }

    [Test]
    public void RentalLeakSuspected_ReleasedBeforeThreshold_NotRaised()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        int reports = 0;
        pool.RentalLeakSuspected += (sender, args) => reports++;
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        AdvanceInTicks(time, s_leakThreshold - s_idleTick);
        pool.Release(slot);
        AdvanceInTicks(time, 4 * s_leakThreshold);

        Assert.That(reports, Is.Zero);
    }

    [Test]
    public void RentalLeakSuspected_NextRentalOfTheSameObjectHeldTooLong_RaisedAgain()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        int reports = 0;
        pool.RentalLeakSuspected += (sender, args) => reports++;
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        AdvanceInTicks(time, 2 * s_leakThreshold);
        pool.Release(slot);

        slot = pool.TakeSlot();
        AdvanceInTicks(time, 2 * s_leakThreshold);

        Assert.That(reports, Is.EqualTo(2));
        pool.Release(slot);
    }

    [Test]
    public void RentalLeakSuspected_HandlerThrows_TimerKeepsReporting()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        int reports = 0;
        pool.RentalLeakSuspected += (sender, args) =>
        {
            reports++;
            throw new InvalidOperationException("handler bug");
        };
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        AdvanceInTicks(time, 2 * s_leakThreshold);

        PoolSlot<TrackedObject> second = pool.TakeSlot();
        AdvanceInTicks(time, 2 * s_leakThreshold);

        Assert.That(reports, Is.EqualTo(2));
        ReleaseAll(pool, first, second);
    }

    [Test]
    public void RentalLeakSuspected_OptionOff_NeverRaisedAndNoTraceKept()
    {
        using var pool = new TrackedPool(1);
        int reports = 0;
        pool.RentalLeakSuspected += (sender, args) => reports++;
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        Assert.That(reports, Is.Zero);
        Assert.That(slot.History, Is.Null);
        pool.Release(slot);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static PoolSlot<TrackedObject> TakeForLeakTest(TrackedPool pool) => pool.TakeSlot();

    [Test]
    public void LeakDetection_UnsampledTakesAndReleases_ReadNoClock()
    {
        var time = new CountingTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, LeakDetectionThreshold = s_leakThreshold, LeakSamplingInterval = 1_000, TimeProvider = time });
        pool.Release(pool.TakeSlot());
        int before = time.Reads;

        for (int i = 0; i < 100; i++)
        {
            pool.Release(pool.TakeSlot());
        }

        Assert.That(time.Reads, Is.EqualTo(before));
    }

    /// <summary>A clock that moves by a step each time it is read, and when told; its timers never fire.</summary>
    private sealed class SteppingTimeProvider(TimeSpan step) : TimeProvider
    {
        // Not 0, which the pool's idle stamps take for "not seen yet".
        private long _now = TimeSpan.TicksPerHour;

        public int Reads { get; private set; }

        public override long TimestampFrequency => TimeSpan.TicksPerSecond;

        public override long GetTimestamp()
        {
            Reads++;
            return Interlocked.Add(ref _now, step.Ticks) - step.Ticks;
        }

        public void Advance(TimeSpan delta) => Interlocked.Add(ref _now, delta.Ticks);

        // Its timers, which never fire here.
        private readonly ManualTimeProvider _timers = new();

        public override ITimer CreateTimer(TimerCallback callback, object? state, TimeSpan dueTime, TimeSpan period) => _timers.CreateTimer(callback, state, dueTime, period);
    }

    /// <summary>A fake clock that counts how often it is read.</summary>
    private sealed class CountingTimeProvider : FakeTimeProvider
    {
        public int Reads { get; private set; }

        public override long GetTimestamp()
        {
            Reads++;
            return base.GetTimestamp();
        }
    }

    [Test]
    public void RentalLeakSuspected_FirstHandlerThrows_LaterHandlersStillRaised()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        int reports = 0;
        pool.RentalLeakSuspected += (sender, args) => throw new InvalidOperationException("handler failed");
        pool.RentalLeakSuspected += (sender, args) => reports++;
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        AdvanceInTicks(time, 2 * s_leakThreshold);

        Assert.That(reports, Is.EqualTo(1));
        pool.Release(slot);
    }
}
