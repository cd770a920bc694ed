using System.Collections.Concurrent;
using System.Diagnostics.Metrics;

namespace SocketServers.Tests;

/// <summary>Reads the SocketServers meter with a <see cref="MeterListener"/>, for one server (by its port).</summary>
internal sealed class SocketServersMeterReader : IDisposable
{
    private readonly MeterListener _listener = new();
    private readonly int _port;
    private readonly ConcurrentQueue<(string Instrument, double Value, Dictionary<string, object?> Tags)> _recorded = new();
    private readonly ConcurrentQueue<(string Instrument, double Value)> _observed = new();

    public SocketServersMeterReader(int port)
    {
        _port = port;
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (instrument.Meter.Name == "SocketServers")
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) => Add(instrument, value, tags));
        _listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) => Add(instrument, value, tags));
        _listener.Start();
    }

    /// <summary>Collects the observable instruments now and returns the value each reported for this server.</summary>
    public Dictionary<string, double> Observe()
    {
        _observed.Clear();
        _listener.RecordObservableInstruments();
        return _observed.GroupBy(m => m.Instrument).ToDictionary(g => g.Key, g => g.Last().Value);
    }

    /// <summary>Gets every measurement of <paramref name="instrument"/> (not an observable one) recorded for this server so far.</summary>
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

        if (!all.TryGetValue("server.port", out object? port) || !Equals(port, _port))
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
