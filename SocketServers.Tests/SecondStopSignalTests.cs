using System.Runtime.InteropServices;
using Microsoft.Extensions.Time.Testing;
using SocketServers.Host;

namespace SocketServers.Tests;

/// <summary>The host's handling of a stop signal received while it stops.</summary>
public sealed class SecondStopSignalTests
{
    // Under dotnet run, one SIGTERM to the process group reaches the host twice, at once: that is one stop, whose grace
    // period goes on. The same signal a second later (Ctrl+C pressed again) ends it.
    [Test]
    public void OnSignal_SameSignalTwiceAtOnceThenAgainLater_OnlyTheLaterOneEndsTheGracePeriod()
    {
        var time = new FakeTimeProvider();
        using var output = new StringWriter();
        using var signals = new SecondStopSignal([], output, time);
        var forwarded = new PosixSignalContext(PosixSignal.SIGTERM);
        var again = new PosixSignalContext(PosixSignal.SIGTERM);

        signals.OnSignal(new PosixSignalContext(PosixSignal.SIGTERM));
        signals.OnSignal(forwarded);
        string afterForwarded = output.ToString();
        time.Advance(TimeSpan.FromSeconds(1));
        signals.OnSignal(again);

        Assert.That(afterForwarded, Is.Empty, "the copy received twice does not end the grace period");
        Assert.That(forwarded.Cancel, Is.True, "nor the process");
        Assert.That(output.ToString(), Does.StartWith("Stopping now"));
        Assert.That(again.Cancel, Is.True);
    }

    // Ctrl+C pressed twice under dotnet run: each press reaches the host twice. The second press's copy arrives long
    // after the first press, but at once after its own: one "Stopping now", not two.
    [Test]
    public void OnSignal_SecondSignalReceivedTwiceAtOnce_EndsTheGracePeriodOnce()
    {
        var time = new FakeTimeProvider();
        using var output = new StringWriter();
        using var signals = new SecondStopSignal([], output, time);
        var secondCopy = new PosixSignalContext(PosixSignal.SIGINT);

        signals.OnSignal(new PosixSignalContext(PosixSignal.SIGINT));
        time.Advance(TimeSpan.FromMilliseconds(5));
        signals.OnSignal(new PosixSignalContext(PosixSignal.SIGINT));
        time.Advance(TimeSpan.FromSeconds(2));
        signals.OnSignal(new PosixSignalContext(PosixSignal.SIGINT));
        time.Advance(TimeSpan.FromMilliseconds(5));
        signals.OnSignal(secondCopy);

        Assert.That(output.ToString().Split('\n', StringSplitOptions.RemoveEmptyEntries), Has.Exactly(1).StartsWith("Stopping now"));
        Assert.That(secondCopy.Cancel, Is.True, "the copy does not end the process either");
    }
}
