using System.Net;
using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Options;
using PoolLib.Tests;

namespace SocketServers.Tests;

// A UdpServer with a protocol that is not echo, in both processings.
[TestFixture(UdpProcessing.ReceiveThreads)]
[TestFixture(UdpProcessing.ReplyBlock)]
public sealed class UdpServerTests(UdpProcessing processing)
{
    [Test]
    public void Constructor_NullHandler_ThrowsArgumentNull()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => _ = new UdpServer(new UdpServerOptions(), null!));

        Assert.That(exception!.ParamName, Is.EqualTo("handler"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_ReplyOfAnotherLength_SentToTheSender(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new CountingHandler(), cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync(new byte[] { 1, 2, 3, 4, 5 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        byte[] reply = new byte[16];
        SocketReceiveFromResult received = await client.ReceiveFromAsync(reply, SocketFlags.None, new IPEndPoint(IPAddress.Any, 0), cancellationToken);

        Assert.That(reply.AsSpan(0, received.ReceivedBytes).ToArray(), Is.EqualTo(new byte[] { 5, 4, 3, 2, 1, 5 }), "reversed, then the length");
        Assert.That(received.RemoteEndPoint, Is.EqualTo(server.LocalEndPoint));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_ReturnsNoReply_NothingSent(CancellationToken cancellationToken)
    {
        var logger = new FakeLogger();
        await using var server = await StartAsync(new CountingHandler(), cancellationToken, logger);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await SendHandledAsync(client, server, [], cancellationToken);
        Assert.That(server.Counters.Drops, Is.Zero, "no reply is not a fault");
        await client.SendToAsync(new byte[] { 7 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        byte[] reply = await client.ReceiveDatagramAsync(cancellationToken);
        string noReply = $"UDP sent no reply to {client.LocalEndPoint}";
        await Poll.UntilAsync(() => logger.Collector.GetSnapshot().Any(record => record.Message == noReply), cancellationToken); // logged after the count
        await Poll.UntilAsync(() => server.Counters.MessagesHandled == 2, cancellationToken); // counted after the send

        Assert.That(reply, Is.EqualTo(new byte[] { 7, 1 }), "the first reply is the second datagram's");
        Assert.That(server.Counters.BytesSent, Is.EqualTo(2), "only the second datagram's reply");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_ReturnsBelowNoReply_DatagramDroppedAsAFault(CancellationToken cancellationToken)
    {
        var logger = new FakeLogger();
        await using var server = await StartAsync(new CountingHandler(), cancellationToken, logger);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await SendHandledAsync(client, server, [0xfe], cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1), "a fault, not no reply");
        await client.SendToAsync(new byte[] { 9 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        byte[] reply = await client.ReceiveDatagramAsync(cancellationToken);
        await Poll.UntilAsync(() => logger.Collector.GetSnapshot().Any(record => record.Exception is not null), cancellationToken); // logged after the count

        Assert.That(reply, Is.EqualTo(new byte[] { 9, 1 }), "the server goes on");
        Assert.That(
            logger.Collector.GetSnapshot().Select(record => record.Exception?.Message),
            Has.Some.EqualTo($"CountingHandler.OnDatagram returned -2, not a reply length from 0 to {new UdpServerOptions().MaxDatagramSize} or NoReply."));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_Throws_DatagramDroppedAndServerGoesOn(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new CountingHandler(), cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync(new byte[] { 0xff }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await client.SendToAsync(new byte[] { 9 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        byte[] reply = new byte[16];
        int received = await client.ReceiveAsync(reply, SocketFlags.None, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.Drops == 1, cancellationToken);

        Assert.That(reply.AsSpan(0, received).ToArray(), Is.EqualTo(new byte[] { 9, 1 }));
        Assert.That(
            meter.Recorded("socketservers.errors").Select(error => (error.Tags["socketservers.operation"], error.Tags["error.type"])),
            Is.EqualTo(new[] { ((object?)"handler", (object?)typeof(InvalidOperationException).FullName) }));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task LoopGuard_DatagramFromAPrivilegedPort_NeverReachesTheHandler(CancellationToken cancellationToken)
    {
        var handler = new CountingHandler();
        using Socket privileged = BindPortBelow1024OrInconclusive();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await privileged.SendToAsync(new byte[] { 1 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.Drops == 1, cancellationToken);
        await client.SendToAsync(new byte[] { 2 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await client.ReceiveAsync(new byte[16], SocketFlags.None, cancellationToken);

        Assert.That(handler.Calls, Is.EqualTo(1), "only the unprivileged client's datagram");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_RemoteEndPoint_IsTheSenders(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new CountingHandler(), cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync("?"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        byte[] reply = await client.ReceiveDatagramAsync(cancellationToken);

        Assert.That(Encoding.ASCII.GetString(reply), Is.EqualTo(client.LocalEndPoint!.ToString()));
    }

    // The same loop guard as the echo server's: a datagram that says it comes from the server's own port would have
    // it answer itself for ever.
    [Test]
    [CancelAfter(30_000)]
    public async Task LoopGuard_ForgedSenderOnTheServersOwnPort_NeverReachesTheHandler(CancellationToken cancellationToken)
    {
        using ForgedDatagramSender forger = ForgedDatagramSender.OpenOrInconclusive();
        var handler = new CountingHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        forger.Send(source: server.LocalEndPoint!, destination: server.LocalEndPoint!, [1, 2]);
        await Poll.UntilAsync(() => server.Counters.Drops == 1, cancellationToken);
        await client.SendToAsync(new byte[] { 3 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await client.ReceiveDatagramAsync(cancellationToken);

        Assert.That(handler.Calls, Is.EqualTo(1), "only the client's datagram");
    }

    // A logging provider that throws on the line about an oversized datagram fails the receive loop itself.
    [Test]
    [CancelAfter(30_000)]
    public async Task ReceiveLoop_FailsUnexpectedly_StartsAgainAndTheHandlerServes(CancellationToken cancellationToken)
    {
        var logger = new ThrowOnceLogger("UDP datagram from");
        await using var server = await StartAsync(new CountingHandler(), cancellationToken, logger);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync(new byte[new UdpServerOptions().MaxDatagramSize + 1], SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.LoopRestarts == 1, cancellationToken);
        await client.SendToAsync(new byte[] { 1, 2 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);

        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo(new byte[] { 2, 1, 2 }));
        Assert.That(meter.Recorded("socketservers.errors").Select(error => error.Tags["socketservers.operation"]), Is.EqualTo(new[] { "receive" }));
        Assert.That(
            logger.Records.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Error).Select(record => record.Message),
            Has.Exactly(1).StartsWith($"UDP receive loop on {server.LocalEndPoint} failed; it starts again in 100 ms"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Metrics_Datagrams_ReportedForAnyProtocol(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new CountingHandler(), cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync(new byte[] { 1, 2, 3 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await client.ReceiveDatagramAsync(cancellationToken);
        await Poll.UntilAsync(() => server.Counters.MessagesHandled == 1, cancellationToken); // counted after the send
        Dictionary<string, double> observed = meter.Observe();

        Assert.That(observed["socketservers.messages"], Is.EqualTo(1));
        Assert.That(observed["socketservers.sent_bytes"], Is.EqualTo(4));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task ReusePort_TwoServersOnOnePort_BothBoundAndTheClientAnswered(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), "reuse-port is for Linux");
        await using var first = await StartAsync(new CountingHandler(), cancellationToken, configure: options => options.ReusePort = true);
        await using var second = await StartAsync(new CountingHandler(), cancellationToken, configure: options => (options.ReusePort, options.Port) = (true, first.LocalEndPoint!.Port));
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync(new byte[] { 1 }, SocketFlags.None, first.LocalEndPoint!, cancellationToken);

        Assert.That(second.LocalEndPoint, Is.EqualTo(first.LocalEndPoint));
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo(new byte[] { 1, 1 }));
    }

    [Test]
    public void AddUdpServer_UnknownSetting_ThrowsOptionsValidationNamingIt()
    {
        IConfiguration configuration = new ConfigurationBuilder().AddInMemoryCollection([KeyValuePair.Create<string, string?>("MaxDatagramSise", "1")]).Build();
        using ServiceProvider services = new ServiceCollection().AddUdpServer<CountingHandler>(configuration).BuildServiceProvider();

        var exception = Assert.Throws<OptionsValidationException>(() => services.GetRequiredService<UdpServer<CountingHandler>>());

        Assert.That(exception!.Message, Does.Contain("'MaxDatagramSise'"));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task AddUdpServer_GenericHost_StartsServesAndStops(CancellationToken cancellationToken)
    {
        HostApplicationBuilder builder = Microsoft.Extensions.Hosting.Host.CreateEmptyApplicationBuilder(new HostApplicationBuilderSettings());
        builder.Services.AddUdpServer<CountingHandler>(options => (options.Address, options.Port, options.Processing) = (IPAddress.Loopback, 0, processing));
        using IHost host = builder.Build();
        await host.StartAsync(cancellationToken);
        var server = host.Services.GetRequiredService<UdpServer<CountingHandler>>();
        using (Socket client = SocketTestExtensions.BoundUdpClient())
        {
            await client.SendToAsync(new byte[] { 1, 2 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
            Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo(new byte[] { 2, 1, 2 }));
        }

        await host.StopAsync(cancellationToken);

        Assert.That(server.IsRunning, Is.False);
        Assert.That(server.Handler, Is.SameAs(host.Services.GetRequiredService<CountingHandler>()));
    }

    // A handler call that ignores the stop must not hold it (nor the host's shutdown) for as long as it runs.
    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_HandlerCallIgnoresTheStop_CompletesWithoutItAndTheCallEndsLater(CancellationToken cancellationToken)
    {
        var handler = new BlockingHandler();
        var logger = new FakeLogger();
        await using var server = await StartAsync(handler, cancellationToken, logger);

        // Should the stop wait for the call, the test's time-out ends the call, so that the test fails instead of hanging.
        using CancellationTokenRegistration release = cancellationToken.Register(handler.Gate.Set);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        await client.SendToAsync(new byte[] { 1 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await handler.Entered.Task.WaitAsync(cancellationToken);

        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(cancellationToken);
        handler.Gate.Set();
        await Poll.UntilAsync(() => server.Counters.PoolTotalCount == server.Counters.PoolAvailableCount, cancellationToken);

        Assert.That(server.StopCutShort, Is.True);
        Assert.That(
            logger.Collector.GetSnapshot().Where(record => record.Level == LogLevel.Warning).Select(record => record.Message),
            Has.Some.Contains("handler calls still running"));
    }

    // The call returns after the server is disposed, and its log line throws: the loop that made it must end quietly,
    // not crash the process on what the dispose freed.
    [Test]
    [CancelAfter(20_000)]
    public async Task DisposeAsync_HandlerCallReturnsAfterItAndItsLogLineThrows_LoopEndsWithoutCrashing(CancellationToken cancellationToken)
    {
        var handler = new BlockingHandler();
        var logger = new ThrowOnceLogger("UDP sent no reply");
        UdpServer server = await StartAsync(handler, cancellationToken, logger, options => options.ConcurrentReceives = 1);
        using CancellationTokenRegistration release = cancellationToken.Register(handler.Gate.Set);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        await client.SendToAsync(new byte[] { 1 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await handler.Entered.Task.WaitAsync(cancellationToken);
        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(cancellationToken);
        await server.DisposeAsync();

        handler.Gate.Set();

        // The line that reports the failure comes after it was handled: a receive thread's loop ends as the server is
        // stopping; the reply block reports a reply that failed.
        string reported = processing == UdpProcessing.ReceiveThreads ? "the server is stopping" : "failed unexpectedly";
        await Poll.UntilAsync(() => logger.Records.Collector.GetSnapshot().Any(record => record.Message.Contains(reported)), cancellationToken);
    }

    // Once the stop has gone on without a call, what is still queued is the stop's to drop, not the handler's to see.
    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_CutShortWhileACallRunsWithDatagramsWaiting_HandlerSeesNoneOfThem(CancellationToken cancellationToken)
    {
        var handler = new BlockingHandler();
        await using var server = await StartAsync(handler, cancellationToken, configure: options => options.ConcurrentReceives = 1);
        using CancellationTokenRegistration release = cancellationToken.Register(handler.Gate.Set);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        await client.SendToAsync(new byte[] { 1 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await handler.Entered.Task.WaitAsync(cancellationToken);
        for (byte i = 2; i <= 4; i++)
        {
            await client.SendToAsync(new byte[] { i }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        }

        // The reply block queues the three behind the call, and its receive holds one more args; a receive thread leaves
        // them to the socket.
        int queued = processing == UdpProcessing.ReplyBlock ? 3 : 0;
        int argsOut = processing == UdpProcessing.ReplyBlock ? 1 + queued + 1 : 1;
        await Poll.UntilAsync(() => server.Counters is var c && c.PoolTotalCount - c.PoolAvailableCount == argsOut, cancellationToken);
        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(cancellationToken);

        handler.Gate.Set();
        await Poll.UntilAsync(() => server.Counters is var c && c.PoolTotalCount == c.PoolAvailableCount, cancellationToken);

        Assert.That(handler.Calls, Is.EqualTo(1));
        Assert.That(server.Counters.Drops, Is.EqualTo(queued), "the queued datagrams, dropped as the server stopped");
    }

    // A server of another protocol must not call itself an echo server: its lifecycle lines name its handler, and
    // the line for each reply says it replied, not that it echoed.
    [Test]
    [CancelAfter(10_000)]
    public async Task StartAndStopAsync_HandlerNotEcho_LifecycleLinesNameTheHandler(CancellationToken cancellationToken)
    {
        var logger = new FakeLogger();
        await using var server = await StartAsync(new CountingHandler(), cancellationToken, logger);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync(new byte[] { 1, 2 }, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await client.ReceiveAsync(new byte[16], SocketFlags.None, cancellationToken);
        await server.StopAsync(cancellationToken);

        string[] lines = [.. logger.Collector.GetSnapshot().Select(record => record.Message)];
        Assert.That(lines, Has.Some.StartsWith($"UDP server for CountingHandler listening on {server.LocalEndPoint} ("));
        Assert.That(lines, Has.Some.EqualTo($"UDP replied with 3 bytes to {client.LocalEndPoint}"));
        Assert.That(lines, Has.Some.StartsWith($"UDP server for CountingHandler on {server.LocalEndPoint} stopped: "));
        Assert.That(lines, Has.None.Contains("echo"));
    }

    private async Task<UdpServer> StartAsync(UdpDatagramHandler handler, CancellationToken cancellationToken, ILogger? logger = null, Action<UdpServerOptions>? configure = null)
    {
        var options = new UdpServerOptions { Address = IPAddress.Loopback, Port = 0, Processing = processing, ConcurrentReceives = 2 };
        configure?.Invoke(options);
        return await Started.StartAsync(new UdpServer(options, handler, logger), cancellationToken);
    }

    /// <summary>Sends <paramref name="datagram"/> and waits until the server has answered or dropped it: a reply to it
    /// comes before any to a datagram sent next.</summary>
    private static async Task SendHandledAsync(Socket client, UdpServer server, byte[] datagram, CancellationToken cancellationToken)
    {
        long before = server.Counters.MessagesHandled + server.Counters.Drops;
        await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Counters.MessagesHandled + server.Counters.Drops == before + 1, cancellationToken);
    }

    /// <summary>A client on 127.0.0.1 at the highest free port below 1024; inconclusive where binding one is not allowed.</summary>
    private static Socket BindPortBelow1024OrInconclusive()
    {
        var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        for (int port = UdpServerOptions.FirstUnprivilegedPort - 1; port >= 512; port--)
        {
            try
            {
                client.Bind(new IPEndPoint(IPAddress.Loopback, port));
                return client;
            }
            catch (SocketException ex) when (ex.SocketErrorCode == SocketError.AddressAlreadyInUse)
            {
                // A service has it: try the next port down.
            }
            catch (SocketException ex)
            {
                client.Dispose();
                Assume.That(ex.SocketErrorCode, Is.Not.EqualTo(SocketError.AccessDenied), "binding a port below 1024 needs privileges this process does not have");
                throw;
            }
        }

        client.Dispose();
        Assert.Inconclusive("every port from 512 to 1023 is in use");
        return client;
    }

    /// <summary>Blocks every call until <see cref="Gate"/> is set, then replies nothing.</summary>
    private sealed class BlockingHandler : UdpDatagramHandler
    {
        private int _calls;

        public TaskCompletionSource Entered { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public ManualResetEventSlim Gate { get; } = new();

        public int Calls => Volatile.Read(ref _calls);

        public override int OnDatagram(UdpDatagram datagram)
        {
            Interlocked.Increment(ref _calls);
            Entered.TrySetResult();
            Gate.Wait();
            return NoReply;
        }
    }

    /// <summary>Replies with the datagram reversed and its length after it; none to an empty one; throws on 0xff;
    /// returns -2 on 0xfe; the sender's endpoint as text to "?".</summary>
    private sealed class CountingHandler : UdpDatagramHandler
    {
        private int _calls;

        public int Calls => Volatile.Read(ref _calls);

        public override int OnDatagram(UdpDatagram datagram)
        {
            Interlocked.Increment(ref _calls);
            if (datagram.Length == 0)
            {
                return NoReply;
            }

            if (datagram.Data[0] == 0xff)
            {
                throw new InvalidOperationException("the datagram says so");
            }

            if (datagram.Data[0] == 0xfe)
            {
                return -2;
            }

            if (datagram.Data.SequenceEqual("?"u8))
            {
                return Encoding.ASCII.GetBytes(datagram.RemoteEndPoint.ToString(), datagram.Buffer);
            }

            datagram.Buffer[..datagram.Length].Reverse();
            datagram.Buffer[datagram.Length] = (byte)datagram.Length;
            return datagram.Length + 1;
        }
    }
}
