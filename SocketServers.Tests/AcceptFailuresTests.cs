using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Time.Testing;
using SocketServers.Internal;

namespace SocketServers.Tests;

// What the accept loop does after a failed accept. A client waiting in the backlog keeps the listener readable, so an
// accept retried at once after a failure such as running out of file descriptors fails at once, for ever: the loop
// must pause before it accepts again, at the connection cap as below it, and warn only a few times a second.
public sealed class AcceptFailuresTests
{
    [Test]
    [CancelAfter(10_000)]
    public async Task OnFailedAsync_SocketError_MeteredAndAcceptsAgainOnlyAfterThePause(CancellationToken cancellationToken)
    {
        await using TcpEchoServer server = await TcpEchoTesting.StartAsync(cancellationToken: cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        var time = new FakeTimeProvider();
        var failures = new AcceptFailures(server, NullLogger.Instance, time);

        Task<bool> again = failures.OnFailedAsync(SocketError.TooManyOpenSockets, cancellationToken).AsTask();
        bool completedAtOnce = again.IsCompleted;
        time.Advance(AcceptFailures.Backoff - TimeSpan.FromTicks(1));
        bool completedBeforeThePause = again.IsCompleted;
        time.Advance(TimeSpan.FromTicks(1));

        Assert.That(await again, Is.True);
        Assert.That(completedAtOnce, Is.False);
        Assert.That(completedBeforeThePause, Is.False, "the loop waits the whole pause");
        var errors = meter.Recorded("socketservers.errors");
        Assert.That(errors, Has.Count.EqualTo(1));
        Assert.That(errors[0].Tags["socketservers.operation"], Is.EqualTo("accept"));
        Assert.That(errors[0].Tags["error.type"], Is.EqualTo(nameof(SocketError.TooManyOpenSockets)));
    }

    [TestCase(SocketError.ConnectionReset)]
    [TestCase(SocketError.ConnectionAborted)]
    [CancelAfter(10_000)]
    public async Task OnFailedAsync_ClientLeftBeforeItsAccept_AcceptsAgainAtOnceUnmetered(SocketError error, CancellationToken cancellationToken)
    {
        await using TcpEchoServer server = await TcpEchoTesting.StartAsync(cancellationToken: cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        var failures = new AcceptFailures(server, NullLogger.Instance, new FakeTimeProvider());

        ValueTask<bool> again = failures.OnFailedAsync(error, cancellationToken);

        Assert.That(again.IsCompleted, Is.True);
        Assert.That(await again, Is.True);
        Assert.That(meter.Recorded("socketservers.errors"), Is.Empty);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task OnFailedAsync_StopDuringThePause_EndsItAndAcceptsNoMore(CancellationToken cancellationToken)
    {
        await using var server = new TcpEchoServer(TcpEchoTesting.LoopbackOptions());
        var failures = new AcceptFailures(server, NullLogger.Instance, new FakeTimeProvider());
        using var stopping = new CancellationTokenSource();

        Task<bool> again = failures.OnFailedAsync(SocketError.TooManyOpenSockets, stopping.Token).AsTask();
        await stopping.CancelAsync();

        Assert.That(await again.WaitAsync(cancellationToken), Is.False);
        Assert.That(await failures.OnFailedAsync(SocketError.TooManyOpenSockets, stopping.Token), Is.False, "stopping");
        Assert.That(await failures.OnFailedAsync(SocketError.OperationAborted, cancellationToken), Is.False, "the listener closed");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task OnFailedAsync_FailuresInARow_WarnsThreeTimesASecondAndCountsTheRest(CancellationToken cancellationToken)
    {
        await using var server = new TcpEchoServer(TcpEchoTesting.LoopbackOptions());
        var logger = new FakeLogger();
        var time = new FakeTimeProvider();
        var failures = new AcceptFailures(server, logger, time);

        // Five failures, one pause apart, within one second of the clock; then one more a second later.
        for (int i = 0; i < 5; i++)
        {
            Task<bool> again = failures.OnFailedAsync(SocketError.TooManyOpenSockets, cancellationToken).AsTask();
            time.Advance(AcceptFailures.Backoff);
            Assert.That(await again, Is.True);
        }

        time.Advance(TimeSpan.FromSeconds(1));
        Task<bool> last = failures.OnFailedAsync(SocketError.TooManyOpenSockets, cancellationToken).AsTask();
        time.Advance(AcceptFailures.Backoff);
        Assert.That(await last, Is.True);

        string[] warnings = [.. logger.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Warning).Select(record => record.Message)];
        Assert.That(warnings, Has.Length.EqualTo(4));
        Assert.That(warnings, Has.All.StartWith("TCP accept on").And.Contain(nameof(SocketError.TooManyOpenSockets)));
        Assert.That(warnings[3], Does.EndWith("(2 similar suppressed since the last one)"));
    }
}
