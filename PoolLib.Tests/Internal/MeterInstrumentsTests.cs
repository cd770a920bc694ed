using System.Diagnostics.Metrics;
using PoolLib.Internal;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests.Internal;

public sealed class MeterInstrumentsTests
{
    [Test]
    public void EnsurePublished_ListenerThrows_ReturnsAndWithdrawsWhatWasPublished()
    {
        string meterName = UniqueName();
        using var seen = new PublicationRecorder(meterName);
        var instruments = new MeterInstruments<Pair>(meterName, Pair.Create);
        using MeterListener failing = ThrowingMeterListener.Start(meterName);

        instruments.EnsurePublished();

        Assert.That(instruments.Current, Is.Null);
        Assert.That(seen.Published, Is.EqualTo(new[] { "pair.first" }), "the publication ended at the listener that threw");
        Assert.That(seen.Live, Is.Empty, "what the other listener took was completed");
    }

    [Test]
    public void EnsurePublished_AfterAListenerThrew_PublishesTheWholeSetOnce()
    {
        string meterName = UniqueName();
        using var seen = new PublicationRecorder(meterName);
        var instruments = new MeterInstruments<Pair>(meterName, Pair.Create);
        using (ThrowingMeterListener.Start(meterName))
        {
            instruments.EnsurePublished();
        }

        instruments.EnsurePublished();
        instruments.EnsurePublished();
        instruments.Current!.First.Add(1);

        Assert.That(seen.Live, Is.EqualTo(new[] { "pair.first", "pair.second" }));
        Assert.That(seen.Measured, Is.EqualTo(1), "the instrument recorded to is the one listeners took");
    }

    [Test]
    public void EnsurePublished_CalledAgainFromAListenerAsTheSetIsPublished_LeavesOneSetPublished()
    {
        string meterName = UniqueName();
        using var seen = new PublicationRecorder(meterName);
        MeterInstruments<Pair>? instruments = null;
        int calls = 0;
        using var reentering = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                if (instrument.Meter.Name == meterName && Interlocked.Increment(ref calls) == 1)
                {
                    instruments!.EnsurePublished();
                }
            },
        };
        reentering.Start();
        instruments = new MeterInstruments<Pair>(meterName, Pair.Create);

        instruments.EnsurePublished();

        Assert.That(instruments.Current, Is.Not.Null);
        Assert.That(seen.Live, Is.EqualTo(new[] { "pair.first", "pair.second" }), "the outer attempt withdrew its set");
        Assert.That(seen.Instrument("pair.first"), Is.SameAs(instruments.Current!.First));
    }

    private static string UniqueName() => $"test-{Guid.NewGuid():N}";

    /// <summary>A set of two instruments, one recorded to and one observable.</summary>
    private sealed record Pair(Counter<long> First, ObservableCounter<long> Second)
    {
        public static Pair Create(Meter meter) => new(meter.CreateCounter<long>("pair.first"), meter.CreateObservableCounter("pair.second", () => 0L));
    }

    /// <summary>Takes every instrument of one meter name as it is published and notes which are completed since.</summary>
    private sealed class PublicationRecorder : IDisposable
    {
        private readonly MeterListener _listener = new();
        private readonly List<Instrument> _published = [];
        private readonly List<Instrument> _completed = [];
        private long _measured;

        public PublicationRecorder(string meterName)
        {
            _listener.InstrumentPublished = (instrument, listener) =>
            {
                if (instrument.Meter.Name == meterName)
                {
                    lock (_published)
                    {
                        _published.Add(instrument);
                    }

                    listener.EnableMeasurementEvents(instrument);
                }
            };
            _listener.MeasurementsCompleted = (instrument, _) =>
            {
                lock (_published)
                {
                    _completed.Add(instrument);
                }
            };
            _listener.SetMeasurementEventCallback<long>((_, value, _, _) => Interlocked.Add(ref _measured, value));
            _listener.Start();
        }

        /// <summary>Gets the names of the instruments published, in order, withdrawn or not.</summary>
        public IReadOnlyList<string> Published
        {
            get
            {
                lock (_published)
                {
                    return [.. _published.Select(instrument => instrument.Name)];
                }
            }
        }

        /// <summary>Gets the names of the instruments published and not completed, in order.</summary>
        public IReadOnlyList<string> Live
        {
            get
            {
                lock (_published)
                {
                    return [.. _published.Except(_completed).Select(instrument => instrument.Name)];
                }
            }
        }

        public long Measured => Interlocked.Read(ref _measured);

        /// <summary>The live instrument named <paramref name="name"/>.</summary>
        public Instrument Instrument(string name)
        {
            lock (_published)
            {
                return _published.Except(_completed).Single(instrument => instrument.Name == name);
            }
        }

        public void Dispose() => _listener.Dispose();
    }
}
