using System.Collections.Concurrent;
using System.Diagnostics.Metrics;

namespace SocketServers.Tests;

/// <summary>Reads one meter with a <see cref="MeterListener"/>, for one server or pool: the measurements whose tag names it.</summary>
internal sealed class MeterReader : IDisposable
{
    private readonly MeterListener _listener = new();
    private readonly string _tag;
    private readonly object _tagValue;
    private readonly ConcurrentQueue<(string Instrument, double Value, Dictionary<string, object?> Tags)> _recorded = new();
    private readonly ConcurrentQueue<(string Instrument, double Value)> _observed = new();

    /// <summary>Reads the measurements of <paramref name="meter"/> whose tag <paramref name="tag"/> is <paramref name="tagValue"/>.</summary>
    public MeterReader(string meter, string tag, object tagValue)
    {
        _tag = tag;
        _tagValue = tagValue;
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == meter)
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) => Add(instrument, value, tags));
        _listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) => Add(instrument, value, tags));
        _listener.Start();
    }

    /// <summary>Reads the SocketServers meter for the server on <paramref name="port"/>.</summary>
    public static MeterReader ForServer(int port) => new("SocketServers", "server.port", port);

    /// <summary>Reads the PoolLib meter for the pool named <paramref name="name"/>.</summary>
    public static MeterReader ForPool(string name) => new("PoolLib", "pool.name", name);

    /// <summary>Collects the observable instruments now and returns the value each reported for this server or pool.</summary>
    public Dictionary<string, double> Observe()
    {
        _observed.Clear();
        _listener.RecordObservableInstruments();
        return _observed.GroupBy(m => m.Instrument).ToDictionary(g => g.Key, g => g.Last().Value);
    }

    /// <summary>Gets every measurement of <paramref name="instrument"/> (not an observable one) recorded for this server or pool so far.</summary>
    public IReadOnlyList<(double Value, Dictionary<string, object?> Tags)> Recorded(string instrument) =>
        [.. _recorded.Where(m => m.Instrument == instrument).Select(m => (m.Value, m.Tags))];

    public void Dispose() => _listener.Dispose();

    private void Add(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
    {
        var all = new Dictionary<string, object?>();
        foreach (KeyValuePair<string, object?> tag in tags)
        {
            all[tag.Key] = tag.Value;
        }

        if (!all.TryGetValue(_tag, out object? tagged) || !Equals(tagged, _tagValue))
        {
            return;
        }

        if (instrument.IsObservable)
        {
            _observed.Enqueue((instrument.Name, value));
        }
        else
        {
            _recorded.Enqueue((instrument.Name, value, all));
        }
    }
}
