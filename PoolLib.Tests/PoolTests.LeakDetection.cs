using System.Runtime.CompilerServices;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// Leak detection: a rental held past the threshold is reported once, with where it was taken.
public sealed partial class PoolTests
{
    private static readonly TimeSpan s_leakThreshold = TimeSpan.FromMinutes(1);

    [Test]
    public void RentalLeakSuspected_RentalHeldPastThreshold_RaisedOnceWithNameTimeAndTrace()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = "leaky", LeakDetectionThreshold = s_leakThreshold, TimeProvider = time });
        var reports = new List<PoolLeakEventArgs>();
        pool.RentalLeakSuspected += (sender, args) => reports.Add(args);
        PoolSlot<TrackedObject> slot = TakeForLeakTest(pool);

        AdvanceInTicks(time, s_leakThreshold + s_idleTick);
        AdvanceInTicks(time, 4 * s_leakThreshold);

        Assert.That(reports, Has.Count.EqualTo(1));
        Assert.That(reports[0].PoolName, Is.EqualTo("leaky"));
        Assert.That(reports[0].HeldFor, Is.GreaterThanOrEqualTo(s_leakThreshold));
        Assert.That(reports[0].StackTrace.ToString(), Does.Contain(nameof(TakeForLeakTest)));
        pool.Release(slot);
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
