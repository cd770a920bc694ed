using System.Diagnostics.Metrics;
using Microsoft.Extensions.Time.Testing;
using OpenTelemetry;
using OpenTelemetry.Metrics;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// pool.use_time (take to release) and pool.create_time (the constructor), in seconds of the pool's clock,
// tagged pool.name; nothing reads the clock for them while no listener has them on.
public sealed partial class PoolTests
{
    [Test]
    public void Histograms_MeterListener_UseTimeFromTakeToReleaseAndCreateTimeOfTheConstructor()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, Name = UniqueName(), TimeProvider = time }) { BeforeConstruct = () => time.Advance(TimeSpan.FromSeconds(2)) };
        var measured = new List<(string Instrument, double Seconds)>();
        using var listener = new MeterListener
        {
            InstrumentPublished = (instrument, listening) =>
            {
                if (instrument.Meter.Name == "PoolLib" && instrument.Name is "pool.use_time" or "pool.create_time")
                {
                    listening.EnableMeasurementEvents(instrument);
                }
            },
        };
        listener.SetMeasurementEventCallback<double>((instrument, value, tags, state) =>
        {
            if (tags.ToArray().Contains(new KeyValuePair<string, object?>("pool.name", pool.Name)))
            {
                measured.Add((instrument.Name, value));
            }
        });
        listener.Start();

        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        time.Advance(TimeSpan.FromSeconds(3));
        pool.Release(slot);
        slot = pool.TakeSlot();
        time.Advance(TimeSpan.FromSeconds(5));
        slot.Discard();

        Assert.That(measured, Is.EqualTo(new[] { ("pool.create_time", 2.0), ("pool.use_time", 3.0), ("pool.use_time", 5.0) }));
    }

    [Test]
    public void Histograms_ListenerStartedDuringARental_ThatRentalNotRecorded()
    {
        var time = new FakeTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName(), TimeProvider = time });
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        using var useTime = new Microsoft.Extensions.Diagnostics.Metrics.Testing.MetricCollector<double>(null, "PoolLib", "pool.use_time");

        time.Advance(TimeSpan.FromSeconds(1));
        pool.Release(slot);
        pool.Release(pool.TakeSlot());

        Assert.That(useTime.GetMeasurementSnapshot().Where(m => Equals(m.Tags["pool.name"], pool.Name)).Select(m => m.Value), Is.EqualTo(new[] { 0.0 }));
    }

    [Test]
    public void Histograms_NoListener_TakesAndReleasesReadNoClock()
    {
        var time = new CountingTimeProvider();
        using var pool = new TrackedPool(new PoolOptions { MaxCapacity = 2, TimeProvider = time });
        pool.Release(pool.TakeSlot());
        int before = time.Reads;

        PoolSlot<TrackedObject> first = pool.TakeSlot();
        PoolSlot<TrackedObject> second = pool.TakeSlot();
        ReleaseAll(pool, first, second);

        Assert.That(time.Reads, Is.EqualTo(before));
    }

    [Test]
    public void Histograms_OpenTelemetryInMemoryExporter_ExportsBothWithThePoolsName()
    {
        var time = new FakeTimeProvider();
        var exported = new List<Metric>();
        using (MeterProvider provider = Sdk.CreateMeterProviderBuilder().AddMeter("PoolLib").AddInMemoryExporter(exported).Build())
        using (var pool = new TrackedPool(new PoolOptions { MaxCapacity = 1, Name = UniqueName(), TimeProvider = time }) { BeforeConstruct = () => time.Advance(TimeSpan.FromSeconds(2)) })
        {
            PoolSlot<TrackedObject> slot = pool.TakeSlot();
            time.Advance(TimeSpan.FromSeconds(3));
            pool.Release(slot);
            provider.ForceFlush();

            Assert.That(HistogramSum(exported, "pool.use_time", pool.Name), Is.EqualTo((1, 3.0)));
            Assert.That(HistogramSum(exported, "pool.create_time", pool.Name), Is.EqualTo((1, 2.0)));
            Assert.That(exported.Single(metric => metric.Name == "pool.use_time").Unit, Is.EqualTo("s"));
        }
    }

    /// <summary>The count and sum of the histogram points of <paramref name="name"/> tagged with the pool's name.</summary>
    private static (long Count, double Sum) HistogramSum(List<Metric> exported, string name, string poolName)
    {
        long count = 0;
        double sum = 0;
        foreach (Metric metric in exported.Where(metric => metric.Name == name))
        {
            foreach (ref readonly MetricPoint point in metric.GetMetricPoints())
            {
                foreach (KeyValuePair<string, object?> tag in point.Tags)
                {
                    if (tag.Key == "pool.name" && Equals(tag.Value, poolName))
                    {
                        count += point.GetHistogramCount();
                        sum += point.GetHistogramSum();
                    }
                }
            }
        }

        return (count, sum);
    }
}
