using System.Collections.Concurrent;
using System.Diagnostics.Metrics;
using System.Reflection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// The PoolLib meter: each instrument reports per pool (tag pool.name), counters from slow paths only.
public sealed partial class PoolTests
{
    [Test]
    public void Metrics_CreatedAndDiscarded_CountedPerPoolWithReasons()
    {
        using var created = new MetricCollector<long>(null, "PoolLib", "pool.objects.created");
        using var discarded = new MetricCollector<long>(null, "PoolLib", "pool.objects.discarded");
        TrackedObject? failsCleanUp = null;
        using var pool = new ValidatingPool(new PoolOptions { MaxCapacity = 8, Name = UniqueName() })
        {
            OnCleanUp = candidate =>
            {
                if (ReferenceEquals(candidate, failsCleanUp))
                {
                    throw new InvalidOperationException("clean-up failed");
                }
            },
        };
        using var other = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName() });
        other.Release(other.TakeSlot());
        PoolSlot<TrackedObject>[] slots = [.. Enumerable.Range(0, 5).Select(_ => pool.TakeSlot())];

        slots[0].Discard();
        failsCleanUp = slots[1].Object;
        Assert.Throws<InvalidOperationException>(() => pool.Release(slots[1]));
        pool.Release(slots[2]);
        pool.OnValidate = candidate => !ReferenceEquals(candidate, slots[2].Object);
        slots[2] = pool.TakeSlot();
        ReleaseAll(pool, slots[2], slots[3], slots[4]);
        pool.Trim();

        Assert.That(Sum(created, pool.Name), Is.EqualTo(6));
        Assert.That(Reasons(discarded, pool.Name), Is.EquivalentTo(new[] { "discarded", "cleanup_failed", "invalid", "trimmed", "trimmed", "trimmed" }));
    }

    [Test]
    public void Metrics_Expired_CountedWithTheirReason()
    {
        using var discarded = new MetricCollector<long>(null, "PoolLib", "pool.objects.discarded");
        var time = new Microsoft.Extensions.Time.Testing.FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), MaxObjectLifetime = TimeSpan.FromMinutes(1), TimeProvider = time });
        PoolSlot<TrackedObject> old = pool.TakeSlot();
        time.Advance(TimeSpan.FromMinutes(1));
        pool.Release(old);
        PoolSlot<TrackedObject> rented = pool.TakeSlot();
        pool.Clear();
        pool.Release(rented);
        pool.Release(pool.TakeSlot());
        pool.Dispose();

        Assert.That(Reasons(discarded, pool.Name), Is.EquivalentTo(new[] { "expired", "expired", "disposed" }));
    }

    [Test]
    public void Metrics_ObservableGauges_ReportIdleUsedMaxAndWaiting()
    {
        using var objects = new MetricCollector<long>(null, "PoolLib", "pool.objects");
        using var max = new MetricCollector<long>(null, "PoolLib", "pool.objects.max");
        using var waiting = new MetricCollector<long>(null, "PoolLib", "pool.takers.waiting");
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 3, Name = UniqueName() });
        pool.Prewarm(3);
        PoolSlot<TrackedObject>[] rented = [pool.TakeSlot(), pool.TakeSlot(), pool.TakeSlot()];
        pool.Release(rented[0]);
        PoolSlot<TrackedObject> again = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiter = pool.TakeSlotAsync();

        objects.RecordObservableInstruments();
        max.RecordObservableInstruments();
        waiting.RecordObservableInstruments();

        Assert.That(Latest(objects, pool.Name, "idle"), Is.EqualTo(0));
        Assert.That(Latest(objects, pool.Name, "used"), Is.EqualTo(3));
        Assert.That(Latest(max, pool.Name), Is.EqualTo(3));
        Assert.That(Latest(waiting, pool.Name), Is.EqualTo(1));

        ReleaseAll(pool, again, rented[1], rented[2]);
        pool.Release(waiter.AsTask().GetAwaiter().GetResult());
        objects.RecordObservableInstruments();
        Assert.That(Latest(objects, pool.Name, "idle"), Is.EqualTo(3));
        Assert.That(Latest(objects, pool.Name, "used"), Is.EqualTo(0));
    }

    [Test]
    public void Metrics_DisposedPool_NoLongerObserved()
    {
        using var max = new MetricCollector<long>(null, "PoolLib", "pool.objects.max");
        var pool = new TrackedPool(new PoolOptions { MaxCapacity = 3, Name = UniqueName() });

        pool.Dispose();
        max.RecordObservableInstruments();

        Assert.That(max.GetMeasurementSnapshot().Where(m => Equals(m.Tags["pool.name"], pool.Name)), Is.Empty);
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task Metrics_TakesThatWaitedAndTimedOut_RecordedAsWaitTimeAndTimeouts(CancellationToken cancellationToken)
    {
        using var waitTime = new MetricCollector<double>(null, "PoolLib", "pool.take.wait_time");
        using var timeouts = new MetricCollector<long>(null, "PoolLib", "pool.take.timeouts");
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName() });
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        bool timedOut = !pool.TryTakeSlot(TimeSpan.FromMilliseconds(1), out _);
        using var cancel = new CancellationTokenSource();
        ValueTask<PoolSlot<TrackedObject>> cancelled = pool.TakeSlotAsync(cancel.Token);
        cancel.Cancel();
        ValueTask<PoolSlot<TrackedObject>> served = pool.TakeSlotAsync(cancellationToken);

        pool.Release(held);
        pool.Release(await served);

        Assert.That(timedOut, Is.True);
        Assert.That(async () => await cancelled, Throws.InstanceOf<OperationCanceledException>());
        Assert.That(Sum(timeouts, pool.Name), Is.EqualTo(2));
        Assert.That(waitTime.GetMeasurementSnapshot().Count(m => Equals(m.Tags["pool.name"], pool.Name)), Is.EqualTo(1), "only the take that waited and was served");
    }

    [Test]
    public void Metrics_ListenerThrowsAsInstrumentsArePublished_PoolsStillWorkAndAreMeteredOnceItStops()
    {
        // A copy of PoolLib of its own publishes its meter with its first pool, whatever tests ran before this one.
        using var fresh = new FreshCopy(typeof(Pool).Assembly, "PoolLib");
        var created = new ConcurrentDictionary<string, long>();
        using MeterListener counter = CountCreated(created);
        string whileFailing = UniqueName();
        string afterwards = UniqueName();

        using (ThrowingMeterListener.Start("PoolLib"))
        {
            UseFreshPool(fresh, whileFailing);
        }

        UseFreshPool(fresh, afterwards);

        Assert.That(created.GetValueOrDefault(afterwards), Is.EqualTo(1), "the next pool published the instruments again");
    }

    /// <summary>Makes a pool from <paramref name="fresh"/>'s copy of PoolLib, takes and releases an object, and disposes the pool.</summary>
    private static void UseFreshPool(FreshCopy fresh, string name)
    {
        object options = fresh.Create("PoolLib.PoolOptions");
        options.GetType().GetProperty(nameof(PoolOptions.MaxCapacity))!.SetValue(options, 1);
        options.GetType().GetProperty(nameof(PoolOptions.Name))!.SetValue(options, name);
        MethodInfo create = fresh.Assembly.GetType("PoolLib.Pool", throwOnError: true)!.GetMethods()
            .Single(method => method.Name == nameof(Pool.Create) && method.GetParameters()[0].ParameterType == options.GetType()
                && method.GetParameters()[1].ParameterType.GetGenericTypeDefinition() == typeof(Func<>))
            .MakeGenericMethod(typeof(object));
        using var pool = (IDisposable)create.Invoke(null, BindingFlags.DoNotWrapExceptions, binder: null, [options, new Func<object>(() => new object()), null], culture: null)!;
        FreshCopy.Call(pool, nameof(Pool<>.Release), FreshCopy.Call(pool, nameof(Pool<>.TakeSlot)));
    }

    /// <summary>Counts <c>pool.objects.created</c> by pool from every meter named PoolLib: a MetricCollector takes the first meter's only.</summary>
    private static MeterListener CountCreated(ConcurrentDictionary<string, long> created)
    {
        var listener = new MeterListener
        {
            InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == "PoolLib" && instrument.Name == "pool.objects.created")
                {
                    listener.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<long>((_, value, tags, _) =>
        {
            foreach (KeyValuePair<string, object?> tag in tags)
            {
                if (tag is { Key: "pool.name", Value: string pool })
                {
                    created.AddOrUpdate(pool, value, (_, sum) => sum + value);
                }
            }
        });
        listener.Start();
        return listener;
    }

    private static string UniqueName() => $"test-{Guid.NewGuid():N}";

    private static long Sum(MetricCollector<long> collector, string poolName) =>
        collector.GetMeasurementSnapshot().Where(m => Equals(m.Tags["pool.name"], poolName)).Sum(m => m.Value);

    private static IEnumerable<string?> Reasons(MetricCollector<long> collector, string poolName) =>
        collector.GetMeasurementSnapshot().Where(m => Equals(m.Tags["pool.name"], poolName)).Select(m => (string?)m.Tags["reason"]);

    private static long Latest(MetricCollector<long> collector, string poolName, string? state = null) =>
        collector.GetMeasurementSnapshot()
            .Last(m => Equals(m.Tags["pool.name"], poolName) && (state is null || Equals(m.Tags["pool.object.state"], state)))
            .Value;

    [TestCase("pool.objects.created")]
    [TestCase("pool.objects.discarded")]
    [TestCase("pool.take.wait_time")]
    [TestCase("pool.take.timeouts")]
    [TestCase("pool.use_time")]
    [TestCase("pool.create_time")]
    [CancelAfter(10_000)]
    public async Task Metrics_ListenerThrowsFromAMeasurement_NoObjectOrPlaceUnderTheCapLost(string instrumentName, CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName() });
        using MeterListener listener = ThrowingListener(instrumentName, pool.Name);

        pool.TakeSlot().Discard();
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        pool.Release(held);
        PoolSlot<TrackedObject> served = await waiting;
        bool timedOut = !pool.TryTakeSlot(TimeSpan.FromMilliseconds(1), out _);
        pool.Release(served);

        Assert.That(timedOut, Is.True);
        Assert.That(served.Object, Is.SameAs(held.Object));
        AssertCounts(pool, total: 1, available: 1);
    }

    /// <summary>A listener whose callback throws for every measurement of <paramref name="instrumentName"/> tagged with <paramref name="poolName"/>.</summary>
    private static MeterListener ThrowingListener(string instrumentName, string poolName)
    {
        var listener = new MeterListener
        {
            InstrumentPublished = (instrument, listening) =>
            {
                if (instrument.Meter.Name == "PoolLib" && instrument.Name == instrumentName)
                {
                    listening.EnableMeasurementEvents(instrument);
                }
            },
        };

        void ThrowForThePool(ReadOnlySpan<KeyValuePair<string, object?>> tags)
        {
            foreach (KeyValuePair<string, object?> tag in tags)
            {
                if (tag.Key == "pool.name" && Equals(tag.Value, poolName))
                {
                    throw new InvalidOperationException("the listener failed");
                }
            }
        }

        listener.SetMeasurementEventCallback<long>((instrument, value, tags, state) => ThrowForThePool(tags));
        listener.SetMeasurementEventCallback<double>((instrument, value, tags, state) => ThrowForThePool(tags));
        listener.Start();
        return listener;
    }
}
