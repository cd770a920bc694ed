using System.Net.Sockets;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// The SocketServers meter, as a MeterListener reads it for a TCP server.
public sealed partial class TcpEchoServerTests
{
    [Test]
    [CancelAfter(10_000)]
    public async Task Metrics_ConnectionsEchoesAndDurations_ReportedForTheServer(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => options.MaxConnections = 1, cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket held = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await held.AssertEchoOnAsync(cancellationToken);
        using Socket queued = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        Dictionary<string, double> whileFull = meter.Observe();
        held.Dispose();
        await queued.AssertEchoOnAsync(cancellationToken);
        queued.Dispose();
        await WaitForIdleAsync(server, cancellationToken);
        Dictionary<string, double> afterwards = meter.Observe();

        Assert.That(whileFull["socketservers.active_connections"], Is.EqualTo(1));
        if (OperatingSystem.IsLinux())
        {
            Assert.That(whileFull["socketservers.queued_connections"], Is.EqualTo(1), "the second client waits in the backlog");
        }

        Assert.That(afterwards["socketservers.active_connections"], Is.Zero);
        Assert.That(afterwards["socketservers.messages"], Is.EqualTo(server.Counters.MessagesHandled).And.EqualTo(2));
        Assert.That(afterwards["socketservers.sent_bytes"], Is.EqualTo(server.Counters.BytesSent).And.EqualTo(6));
        Assert.That(afterwards["socketservers.rejected_connections"], Is.Zero);
        Assert.That(meter.Recorded("socketservers.connection.duration"), Has.Count.EqualTo(2));
        Assert.That(meter.Recorded("socketservers.connection.duration").Select(m => m.Tags["network.transport"]), Is.All.EqualTo("tcp"));
    }
}
