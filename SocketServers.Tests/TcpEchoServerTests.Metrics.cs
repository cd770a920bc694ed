using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;
using PoolLib.Tests.Fakes;
using SocketServers.Internal;
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

    [Test]
    [CancelAfter(10_000)]
    public async Task Metrics_ListenerThrowsAsInstrumentsArePublished_ServersStillServeAndAreObservedOnceItStops(CancellationToken cancellationToken)
    {
        // A copy of SocketServers of its own publishes its meter with its first server, whatever tests ran before this one.
        using var fresh = new FreshCopy(typeof(SocketServer).Assembly, SocketServerMetrics.MeterName);
        IAsyncDisposable first;
        IPEndPoint firstEndPoint;
        using (ThrowingMeterListener.Start(SocketServerMetrics.MeterName))
        {
            (first, firstEndPoint) = await StartFreshAsync(fresh, cancellationToken);
        }

        await using (first)
        {
            using Socket client = await SocketTestExtensions.ConnectTcpAsync(firstEndPoint, cancellationToken);
            await client.AssertEchoOnAsync(cancellationToken);
            using MeterReader meter = MeterReader.ForServer(firstEndPoint.Port);

            (IAsyncDisposable second, _) = await StartFreshAsync(fresh, cancellationToken);
            await using (second)
            {
                Assert.That(meter.Observe().GetValueOrDefault("socketservers.messages"), Is.EqualTo(1), "the next server published the instruments again");
            }
        }
    }

    /// <summary>Starts an echo server from <paramref name="fresh"/>'s copy of SocketServers on 127.0.0.1, port 0.</summary>
    private static async Task<(IAsyncDisposable Server, IPEndPoint EndPoint)> StartFreshAsync(FreshCopy fresh, CancellationToken cancellationToken)
    {
        object options = fresh.Create("SocketServers.TcpEchoServerOptions");
        options.GetType().GetProperty(nameof(TcpEchoServerOptions.Address))!.SetValue(options, IPAddress.Loopback);
        options.GetType().GetProperty(nameof(TcpEchoServerOptions.Port))!.SetValue(options, 0);
        var server = (IAsyncDisposable)fresh.Create("SocketServers.TcpEchoServer", options);
        try
        {
            await (Task)FreshCopy.Call(server, nameof(SocketServer.StartAsync), cancellationToken)!;
            return (server, (IPEndPoint)server.GetType().GetProperty(nameof(SocketServer.LocalEndPoint))!.GetValue(server)!);
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
    }
}
