using System.Diagnostics.Metrics;
using System.Globalization;
using System.Runtime;
using System.Runtime.InteropServices;
using System.Text;

namespace SocketServers.Host;

/// <summary>Prints the servers' metrics (the <c>SocketServers</c> and <c>PoolLib</c> meters) and the managed heap
/// to standard output: on SIGUSR1 and SIGUSR2 and, if asked, every few seconds.</summary>
/// <remarks>
/// Each printout is <c>stats:</c> lines: the time (UTC) and the seconds since the previous one, a line per instrument and
/// tag set (counters with their growth a second; histograms with count, sum and count a second), then the thread pool's
/// completed work items, the GC's settings, the collections, the allocated bytes and the managed heap. SIGUSR2 first
/// runs a full, blocking collection, so that the heap line shows only what is live. SocketServers/README.md says what
/// each line means.
/// </remarks>
internal sealed class StatsPrinter : IDisposable
{
    // SIGUSR1 and SIGUSR2 on Linux; PosixSignalRegistration takes a raw signal number cast to PosixSignal.
    private const int SigUsr1 = 10;
    private const int SigUsr2 = 12;

    private static readonly string[] s_meters = ["SocketServers", "PoolLib"];

    // Recorded on every rental, so on every message: a record here builds a key string, which the echo path must not pay.
    private static readonly string[] s_perRental = ["pool.use_time"];

    private readonly MeterListener _listener = new();
    private readonly Lock _lock = new();

    // One printout at a time, so that each counts every earlier one in _printedBytes.
    private readonly Lock _printLock = new();
    private readonly SortedDictionary<string, double> _latest = new(StringComparer.Ordinal);
    private readonly SortedDictionary<string, (long Count, double Sum)> _histograms = new(StringComparer.Ordinal);

    // The instruments (with their tags) that only grow, whose rate is printed; under _lock.
    private readonly HashSet<string> _counters = new(StringComparer.Ordinal);

    // Each counter's value and each histogram's count at the previous printout, and when it was; under _printLock.
    private readonly Dictionary<string, double> _previous = new(StringComparer.Ordinal);
    private readonly TimeProvider _time;
    private long _previousTimestamp;
    private readonly TextWriter _output;
    private readonly PosixSignalRegistration? _sigusr1;
    private readonly PosixSignalRegistration? _sigusr2;
    private readonly ITimer? _timer;

    // What the printouts so far allocated on their own thread; written under _printLock.
    private long _printedBytes;

    /// <summary>Starts listening to the meters.</summary>
    /// <param name="output">Where the lines go.</param>
    /// <param name="every">How often to print without a signal; <see langword="null"/> for only on a signal.</param>
    /// <param name="time">The clock of the printouts' times and rates, and of <paramref name="every"/>; the system's by default.</param>
    public StatsPrinter(TextWriter output, TimeSpan? every, TimeProvider? time = null)
    {
        _output = output;
        _time = time ?? TimeProvider.System;
        _previousTimestamp = _time.GetTimestamp();
        _listener.InstrumentPublished = (instrument, listener) =>
        {
            if (s_meters.Contains(instrument.Meter.Name) && !s_perRental.Contains(instrument.Name))
            {
                listener.EnableMeasurementEvents(instrument);
            }
        };
        _listener.SetMeasurementEventCallback<long>((instrument, value, tags, _) => Record(instrument, value, tags));
        _listener.SetMeasurementEventCallback<double>((instrument, value, tags, _) => Record(instrument, value, tags));
        _listener.Start();

        if (OperatingSystem.IsLinux())
        {
            _sigusr1 = PosixSignalRegistration.Create((PosixSignal)SigUsr1, context =>
            {
                context.Cancel = true;
                Print(collectFirst: false);
            });
            _sigusr2 = PosixSignalRegistration.Create((PosixSignal)SigUsr2, context =>
            {
                context.Cancel = true;
                Print(collectFirst: true);
            });
        }

        if (every is { } period)
        {
            _timer = _time.CreateTimer(static state => ((StatsPrinter)state!).Print(collectFirst: false), this, period, period);
        }
    }

    /// <summary>Collects the observable instruments and prints every value seen so far.</summary>
    /// <param name="collectFirst">
    /// Whether to run a full, blocking garbage collection first, so that the heap shows what is live: on SIGUSR2
    /// only, which asks for it.
    /// </param>
    public void Print(bool collectFirst)
    {
        using (_printLock.EnterScope())
        {
            // First, so that the figure holds none of this printout's own allocations.
            long allocated = GC.GetTotalAllocatedBytes(precise: true);
            long ownStart = GC.GetAllocatedBytesForCurrentThread();
            _output.Write(Format(collectFirst, allocated, _printedBytes));
            _output.Flush();
            _printedBytes += GC.GetAllocatedBytesForCurrentThread() - ownStart;
        }
    }

    public void Dispose()
    {
        _timer?.Dispose();
        _sigusr1?.Dispose();
        _sigusr2?.Dispose();
        _listener.Dispose();
    }

    private string Format(bool collectFirst, long allocated, long printedBytes)
    {
        long heap = GC.GetTotalMemory(collectFirst);
        long now = _time.GetTimestamp();
        double seconds = _time.GetElapsedTime(_previousTimestamp, now).TotalSeconds;
        _previousTimestamp = now;
        var text = new StringBuilder();
        text.Append("stats: time ").Append(_time.GetUtcNow().ToString("yyyy-MM-ddTHH:mm:ss.fffZ", CultureInfo.InvariantCulture))
            .Append(" interval_seconds ").Append(seconds.ToString("F3", CultureInfo.InvariantCulture)).Append('\n');
        using (_lock.EnterScope())
        {
            _listener.RecordObservableInstruments();
            foreach ((string name, double value) in _latest)
            {
                text.Append("stats: ").Append(name).Append(' ').Append(value.ToString(CultureInfo.InvariantCulture));
                if (_counters.Contains(name))
                {
                    AppendRate(text, name, value, seconds);
                }

                text.Append('\n');
            }

            foreach ((string name, (long count, double sum)) in _histograms)
            {
                text.Append("stats: ").Append(name).Append(" count ").Append(count)
                    .Append(" sum ").Append(sum.ToString(CultureInfo.InvariantCulture));
                AppendRate(text, name, count, seconds);
                text.Append('\n');
            }
        }

        text.Append("stats: process.thread_pool.completed_items ").Append(ThreadPool.CompletedWorkItemCount).Append('\n');
        IReadOnlyDictionary<string, object> gc = GC.GetConfigurationVariables();
        text.Append("stats: process.gc.settings server ").Append(GCSettings.IsServerGC ? "true" : "false")
            .Append(" concurrent ").Append(gc.TryGetValue("ConcurrentGC", out object? concurrent) && concurrent is true ? "true" : "false")
            .Append(" gen0_max_budget ").Append(Convert.ToString(gc.GetValueOrDefault("GCGen0MaxBudget"), CultureInfo.InvariantCulture)).Append('\n');
        text.Append("stats: process.gc.collections gen0 ").Append(GC.CollectionCount(0))
            .Append(" gen1 ").Append(GC.CollectionCount(1))
            .Append(" gen2 ").Append(GC.CollectionCount(2)).Append('\n');
        text.Append("stats: process.allocated_bytes ").Append(allocated)
            .Append(" by_stats ").Append(printedBytes).Append('\n');
        text.Append("stats: process.managed_heap_bytes ").Append(heap)
            .Append(" committed ").Append(GC.GetGCMemoryInfo().TotalCommittedBytes).Append('\n');
        return text.ToString();
    }

    /// <summary>Appends how much <paramref name="name"/> grew a second since the previous printout, and keeps its value for the next.</summary>
    private void AppendRate(StringBuilder text, string name, double value, double seconds)
    {
        double growth = value - _previous.GetValueOrDefault(name);
        _previous[name] = value;
        text.Append(" per_second ").Append((seconds > 0 ? growth / seconds : 0).ToString("F1", CultureInfo.InvariantCulture));
    }

    private void Record(Instrument instrument, double value, ReadOnlySpan<KeyValuePair<string, object?>> tags)
    {
        var name = new StringBuilder(instrument.Name).Append('{');
        for (int i = 0; i < tags.Length; i++)
        {
            name.Append(i == 0 ? "" : ",").Append(tags[i].Key).Append('=').Append(tags[i].Value);
        }

        string key = name.Append('}').ToString();
        using (_lock.EnterScope())
        {
            if (instrument is Histogram<double> or Histogram<long>)
            {
                (long count, double sum) = _histograms.GetValueOrDefault(key);
                _histograms[key] = (count + 1, sum + value);
            }
            else if (instrument.IsObservable)
            {
                _latest[key] = value;
                if (instrument is ObservableCounter<long> or ObservableCounter<double>)
                {
                    _counters.Add(key);
                }
            }
            else
            {
                _latest[key] = _latest.GetValueOrDefault(key) + value;
                if (instrument is Counter<long> or Counter<double>)
                {
                    _counters.Add(key);
                }
            }
        }
    }
}
