using System.Globalization;
using System.Text.RegularExpressions;
using SocketServers;
using SocketServers.Host;

namespace PoolLib.Tests.SocketServers;

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
