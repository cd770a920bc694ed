using System.Diagnostics.Metrics;
using System.Globalization;
using System.Text.RegularExpressions;
using Microsoft.Extensions.Time.Testing;
using PoolLib;
using SocketServers.Host;

namespace SocketServers.Tests;

/// <summary>The console host's stats printout, printed in this process to a string.</summary>
public sealed class StatsPrinterTests
{
    [Test]
    public void Print_TwiceInARow_AllocatedBytesCountTheEarlierPrintoutApart()
    {
        using var output = new StringWriter(CultureInfo.InvariantCulture);
        using var printer = new StatsPrinter(output, every: null);

        printer.Print(collectFirst: false);
        printer.Print(collectFirst: false);

        (long Allocated, long ByStats)[] readings = [.. Regex.Matches(output.ToString(), @"^stats: process\.allocated_bytes (\d+) by_stats (\d+)$", RegexOptions.Multiline)
            .Select(match => (long.Parse(match.Groups[1].Value, CultureInfo.InvariantCulture), long.Parse(match.Groups[2].Value, CultureInfo.InvariantCulture)))];
        Assert.That(readings, Has.Length.EqualTo(2), output.ToString());
        Assert.That(readings[0].ByStats, Is.Zero, "no printout came before the first");
        Assert.That(readings[1].ByStats, Is.Positive, "the first printout allocated its text");
        Assert.That(readings[1].Allocated - readings[0].Allocated, Is.GreaterThanOrEqualTo(readings[1].ByStats), "the second reading holds the first printout's allocations, which it names");
    }

    // A line a second that says neither when it was printed nor how fast the counters move leaves the reader to
    // subtract each printout from the one before and guess the time between.
    [Test]
    public void Print_TwoSecondsApart_StartsWithTheTimeAndGivesEachCounterItsRate()
    {
        var time = new FakeTimeProvider(new DateTimeOffset(2026, 11, 25, 12, 0, 0, TimeSpan.Zero));
        using var meter = new Meter("SocketServers");
        Counter<long> counter = meter.CreateCounter<long>("test.stats_printer");
        Histogram<double> histogram = meter.CreateHistogram<double>("test.stats_printer.histogram");
        using var output = new StringWriter(CultureInfo.InvariantCulture);
        using var printer = new StatsPrinter(output, every: null, time);
        counter.Add(100);
        printer.Print(collectFirst: false);
        output.GetStringBuilder().Clear();

        time.Advance(TimeSpan.FromSeconds(2));
        counter.Add(50);
        histogram.Record(1.5);
        histogram.Record(2.5);
        printer.Print(collectFirst: false);

        string[] lines = output.ToString().TrimEnd('\n').Split('\n');
        Assert.That(lines[0], Is.EqualTo("stats: time 2026-11-25T12:00:02.000Z interval_seconds 2.000"));
        Assert.That(lines, Has.Member("stats: test.stats_printer{} 150 per_second 25.0"));
        Assert.That(lines, Has.Member("stats: test.stats_printer.histogram{} count 2 sum 4 per_second 1.0"));
    }

    // pool.use_time is recorded on every rental, so on every echoed message; the printer builds a key string per record.
    [Test]
    public void Print_AfterPoolRentals_ShowsThePoolsInstrumentsButNotItsPerRentalHistogram()
    {
        string name = $"stats-printer-{Guid.NewGuid():N}";
        using var output = new StringWriter(CultureInfo.InvariantCulture);
        using var printer = new StatsPrinter(output, every: null);
        using Pool<object> pool = Pool.Create(new PoolOptions { MaxCapacity = 1, Name = name }, () => new object());
        for (int i = 0; i < 3; i++)
        {
            pool.Release(pool.TakeSlot());
        }

        printer.Print(collectFirst: false);

        string[] lines = output.ToString().Split('\n');
        Assert.That(lines, Has.Some.StartsWith($"stats: pool.create_time{{pool.name={name}}} count 1 "), "the printer listens to the pool's meter");
        Assert.That(lines, Has.None.Contains("pool.use_time"));
    }

    [Test]
    public void Print_Always_EndsWithTheHeapAfterTheAllocatedBytes()
    {
        using var output = new StringWriter(CultureInfo.InvariantCulture);
        using var printer = new StatsPrinter(output, every: null);

        printer.Print(collectFirst: false);

        string[] lines = output.ToString().TrimEnd('\n').Split('\n');
        Assert.That(lines, Has.All.StartWith("stats: "));
        Assert.That(lines[^2], Does.Match(@"^stats: process\.allocated_bytes \d+ by_stats 0$"));
        Assert.That(lines[^1], Does.Match(@"^stats: process\.managed_heap_bytes \d+ committed \d+$"), "readers take the heap line for the end of a printout");
    }
}
