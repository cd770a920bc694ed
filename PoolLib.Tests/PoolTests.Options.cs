using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// PoolOptions: every bad value is rejected in the constructor under the option's name, and the name
// defaults to the pool type's.
public sealed partial class PoolTests
{
    public static IEnumerable<TestCaseData> BadOptions()
    {
        yield return new TestCaseData(new PoolOptions { MaxCapacity = 0 }, "options.MaxCapacity").SetName("Constructor_MaxCapacityZero_ThrowsNamingIt");
        yield return new TestCaseData(new PoolOptions { MaxCapacity = 4, MinIdle = -1 }, "options.MinIdle").SetName("Constructor_MinIdleNegative_ThrowsNamingIt");
        yield return new TestCaseData(new PoolOptions { MaxCapacity = 4, MinIdle = 5 }, "options.MinIdle").SetName("Constructor_MinIdleAboveCap_ThrowsNamingIt");
        yield return new TestCaseData(new PoolOptions { MaxCapacity = 4, IdleTimeout = TimeSpan.Zero }, "options.IdleTimeout").SetName("Constructor_IdleTimeoutZero_ThrowsNamingIt");
        yield return new TestCaseData(new PoolOptions { MaxCapacity = 4, MaxObjectLifetime = TimeSpan.FromSeconds(-1) }, "options.MaxObjectLifetime").SetName("Constructor_MaxObjectLifetimeNegative_ThrowsNamingIt");
        yield return new TestCaseData(new PoolOptions { MaxCapacity = 4, LeakDetectionThreshold = TimeSpan.Zero }, "options.LeakDetectionThreshold").SetName("Constructor_LeakDetectionThresholdZero_ThrowsNamingIt");
    }

    [TestCaseSource(nameof(BadOptions))]
    public void Constructor_OptionOutOfRange_ThrowsNamingTheOption(PoolOptions options, string paramName)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => new TrackedPool(options));

        Assert.That(exception!.ParamName, Is.EqualTo(paramName));
    }

    [TestCase("")]
    [TestCase("  ")]
    public void Constructor_BlankName_ThrowsNamingTheOption(string name)
    {
        var exception = Assert.Throws<ArgumentException>(() => new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = name }));

        Assert.That(exception!.ParamName, Is.EqualTo("options.Name"));
    }

    [Test]
    public void Constructor_NullOptions_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => new TrackedPool(options: null!));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
    }

    [Test]
    public void Name_NotSet_IsThePoolTypesName()
    {
        using var pool = new TrackedPool(1);

        Assert.That(pool.Name, Is.EqualTo(nameof(TrackedPool)));
    }

    [Test]
    public void Name_Set_IsTheOptionsName()
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = "buffers" });

        Assert.That(pool.Name, Is.EqualTo("buffers"));
    }

    [Test]
    public void Name_NotSetWithADefaultName_IsTheDefaultName()
    {
        using var pool = new DefaultNamedPool(new PoolOptions { MaxCapacity = 1 }, "connections@db:5432");
        using var named = new DefaultNamedPool(new PoolOptions { MaxCapacity = 1, Name = "orders" }, "connections@db:5432");

        Assert.That((pool.Name, named.Name), Is.EqualTo(("connections@db:5432", "orders")));
    }

    [TestCase(null)]
    [TestCase("")]
    [TestCase(" ")]
    public void Constructor_BlankDefaultName_ThrowsNamingIt(string? defaultName)
    {
        var exception = Assert.Throws(Is.InstanceOf<ArgumentException>(), () => new DefaultNamedPool(new PoolOptions { MaxCapacity = 1 }, defaultName!));

        Assert.That(((ArgumentException)exception!).ParamName, Is.EqualTo("defaultName"));
    }

    [Test]
    public void Constructor_OptionsChangedAfterwards_PoolKeepsWhatItRead()
    {
        var options = new PoolOptions { MaxCapacity = 2, Name = "first" };
        using var pool = new TrackedPool(options);

        options.MaxCapacity = 10;
        options.Name = "second";

        Assert.That(pool.MaxCapacity, Is.EqualTo(2));
        Assert.That(pool.Name, Is.EqualTo("first"));
    }

    [Test]
    public void Release_ObjectOlderThanMaxObjectLifetime_DisposesItInsteadOfStoring()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, MaxObjectLifetime = TimeSpan.FromMinutes(10), TimeProvider = time });
        PoolSlot<TrackedObject> young = pool.TakeSlot();
        pool.Release(young);
        PoolSlot<TrackedObject> old = pool.TakeSlot();

        time.Advance(TimeSpan.FromMinutes(10));
        pool.Release(old);

        Assert.That(old.Object.DisposeCount, Is.EqualTo(1));
        Assert.That(pool.CleanUpCount, Is.EqualTo(1), "CleanUp ran only for the release that stored its object");
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void MaintenanceTimer_IdleObjectsPastMaxObjectLifetime_DisposedEvenBelowMinIdle()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, MinIdle = 2, MaxObjectLifetime = TimeSpan.FromMinutes(10), TimeProvider = time });
        pool.Prewarm(2);

        time.Advance(TimeSpan.FromMinutes(10));

        Assert.That(pool.Created.Select(created => created.DisposeCount), Is.All.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Release_ObjectYoungerThanMaxObjectLifetime_StoresIt()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, MaxObjectLifetime = TimeSpan.FromMinutes(10), TimeProvider = time });
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        // The shortest lifetime an object may draw: 10 minutes less one period (a sixteenth) less a quarter, 6.875 minutes.
        time.Advance(TimeSpan.FromMinutes(6.8));
        pool.Release(slot);

        Assert.That(slot.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void MaintenanceTimer_ObjectsMadeTogether_ExpireOverSeveralTicksAndNoneOutlivesMaxObjectLifetime()
    {
        var time = new FakeTimeProvider();
        var lifetime = TimeSpan.FromMinutes(40);
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 200, MaxObjectLifetime = lifetime, IdleTimeout = TimeSpan.FromDays(1), TimeProvider = time });
        pool.Prewarm(200);
        var ticksThatRetired = new List<TimeSpan>();

        // Every minute, below the timer's period of 2.5 minutes: each step shows whether a tick retired objects.
        for (TimeSpan elapsed = TimeSpan.Zero; elapsed <= lifetime; elapsed += TimeSpan.FromMinutes(1))
        {
            int before = pool.TotalCount;
            time.Advance(elapsed == TimeSpan.Zero ? TimeSpan.Zero : TimeSpan.FromMinutes(1));
            if (pool.TotalCount < before)
            {
                ticksThatRetired.Add(elapsed);
            }
        }

        Assert.That(pool.TotalCount, Is.Zero, "Every object is retired by MaxObjectLifetime.");
        Assert.That(ticksThatRetired, Has.Count.GreaterThanOrEqualTo(4));
        Assert.That(ticksThatRetired, Is.All.GreaterThanOrEqualTo(lifetime - (lifetime / 16) - (lifetime / 4)));
    }

    private static readonly TimeSpan[] s_spansBeyondTheTimersRange = [TimeSpan.FromDays(199), TimeSpan.FromDays(10_000), TimeSpan.MaxValue];
    private static readonly TimeSpan[] s_spansOverAThousandDays = [TimeSpan.FromDays(10_000), TimeSpan.MaxValue];

    [TestCaseSource(nameof(s_spansBeyondTheTimersRange))]
    public void Constructor_TimeSpansBeyondWhatATimerTakes_AcceptedWithTheSystemClock(TimeSpan span)
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, IdleTimeout = span, MaxObjectLifetime = span, LeakDetectionThreshold = span });

        pool.Release(pool.TakeSlot());

        AssertCounts(pool, total: 1, available: 1);
    }

    [TestCaseSource(nameof(s_spansOverAThousandDays))]
    public void MaintenanceTimer_SpansBeyondWhatATimerTakes_ObjectsIdleForAThousandDaysKept(TimeSpan span)
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, IdleTimeout = span, MaxObjectLifetime = span, TimeProvider = time });
        pool.Release(pool.TakeSlot());

        for (int day = 0; day < 1_000; day++)
        {
            time.Advance(TimeSpan.FromDays(1));
        }

        AssertCounts(pool, total: 1, available: 1);
        Assert.That(pool.Created.Single().DisposeCount, Is.Zero);
    }

    /// <summary>A pool whose subclass names it, as one named after what it connects to would.</summary>
    private sealed class DefaultNamedPool(PoolOptions options, string defaultName) : Pool<TrackedObject>(options, defaultName)
    {
        protected override TrackedObject ObjectConstructor() => new();
    }
}
