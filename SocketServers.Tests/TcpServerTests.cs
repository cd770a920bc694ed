using System.Net;
using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PoolLib.Tests;

namespace SocketServers.Tests;

// A TcpServer with a protocol that is not echo: what a handler can do, over loopback.
public sealed partial class TcpServerTests
{
    [Test]
    public void Constructor_NullHandler_ThrowsArgumentNull()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => _ = new TcpServer(new TcpServerOptions(), null!));

        Assert.That(exception!.ParamName, Is.EqualTo("handler"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_SeveralMessagesInOneReceive_EachGetsItsReply(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("one\ntwo\nthree\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("ONE"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("TWO"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("THREE"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task WriteAsync_ReceivedBytesWhileTheNextMessageIsHalfThere_RepliesArriveIntact(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        // The reply lies in the receive buffer, over which the unconsumed "say g" moves to its start after the call.
        await client.SendAsync("say abc\nsay g", cancellationToken);
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);
        await client.SendAsync("hi\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("abc"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("ghi"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task WriteAsync_ReceivedBytesThenOtherBytes_RepliesArriveInOrder(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("say abc\nxyz\nsay def\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("abc"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("XYZ"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("def"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_MessageSpanningReceives_IsHandedOverWhole(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("hel", cancellationToken);
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);
        await client.SendAsync("lo\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("HELLO"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_State_IsKeptPerConnection(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken);
        using LineClient first = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        using LineClient second = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await first.SendAsync("count\ncount\n", cancellationToken);
        await second.SendAsync("count\n", cancellationToken);
        await first.SendAsync("count\n", cancellationToken);

        Assert.That(await first.ReadLineAsync(cancellationToken), Is.EqualTo("1"));
        Assert.That(await first.ReadLineAsync(cancellationToken), Is.EqualTo("2"));
        Assert.That(await second.ReadLineAsync(cancellationToken), Is.EqualTo("1"));
        Assert.That(await first.ReadLineAsync(cancellationToken), Is.EqualTo("3"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_RemoteEndPoint_IsTheClients(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("peer\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo(client.Socket.LocalEndPoint!.ToString()));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Handler_ReplyLargerThanSendBuffer_ClientReceivesAllBytes(CancellationToken cancellationToken)
    {
        const int size = 1024 * 1024 + 7;
        await using var server = await StartAsync(new ScriptedHandler(), options => options.BufferSize = 4096, cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync($"big {size}\n", cancellationToken);
        byte[] reply = await client.ReadExactlyAsync(size, cancellationToken);

        Assert.That(reply, Is.EqualTo(ScriptedHandler.Pattern(size)));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.Empty, "the reply ends with its newline");
        await Poll.UntilAsync(() => server.Counters.BytesSent == size + 1, cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Handler_ClientThatNeverReads_ServerStopsReadingAndHoldsTwoBuffers(CancellationToken cancellationToken)
    {
        // A 16 MiB reply is more than the kernel holds between the two (the server's send buffer grows to 4 MiB at most
        // here, the client's receive buffer is fixed at 64 KiB), so the handler's write waits for good. From then on the
        // server reads nothing: the client's further requests fill the kernel's buffers and its sends stop.
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, options => options.StopGracePeriod = TimeSpan.Zero, cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken, receiveBufferSize: 64 * 1024);
        await client.SendAsync("big 16777216\n", cancellationToken);
        int handledWhenBlocked = await handler.WriteBlocked.Task.WaitAsync(cancellationToken);

        byte[] requests = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("count\n", 10_000)));
        client.Socket.Blocking = false;
        long sent = 0;
        while (TrySend(client.Socket, requests, ref sent))
        {
            // Fill the kernel's buffers between client and server: the server reads none of it.
        }

        Assert.That(sent, Is.GreaterThan(0));
        Assert.That(handler.Handled, Is.EqualTo(handledWhenBlocked), "requests handled after the write began to wait");
        Assert.That(server.BuffersInUse, Is.LessThanOrEqualTo(2), "a receive and a send buffer at most");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_AwaitingAsyncWork_OtherConnectionsGoOn(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient waiting = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        using LineClient other = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await waiting.SendAsync("wait\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);
        await other.SendAsync("hi\n", cancellationToken);
        string? otherReply = await other.ReadLineAsync(cancellationToken);
        handler.Gate.SetResult();

        Assert.That(otherReply, Is.EqualTo("HI"));
        Assert.That(await waiting.ReadLineAsync(cancellationToken), Is.EqualTo("done"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_Close_ClientReadsReplyThenEndOfStream(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("bye\nnot handled\n", cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("bye\n"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_Throws_ConnectionClosesAndServerGoesOn(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using LineClient failing = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await failing.SendAsync("throw\n", cancellationToken);
        string rest = await failing.ReadToEndAsync(cancellationToken);
        using LineClient next = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await next.SendAsync("still\n", cancellationToken);

        Assert.That(rest, Is.Empty);
        Assert.That(await next.ReadLineAsync(cancellationToken), Is.EqualTo("STILL"));
        await handler.Closed.Task.WaitAsync(cancellationToken);
        Assert.That(
            meter.Recorded("socketservers.errors").Select(error => (error.Tags["socketservers.operation"], error.Tags["error.type"])),
            Is.EqualTo(new[] { ((object?)"handler", (object?)typeof(InvalidOperationException).FullName) }));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_MessageLongerThanMaxMessageSize_ConnectionCloses(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), options => (options.BufferSize, options.MaxMessageSize) = (64, 64), cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(new string('a', 100), cancellationToken);

        // The open count drops as the connection closes and the drop is counted after it: a poll of the first alone
        // could read the second before it was counted (it did, run on its own).
        await Poll.UntilAsync(() => server.Counters is { CurrentConnections: 0, Drops: 1 }, cancellationToken);
        Assert.That(server.Counters.TotalConnections, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_IdleConnection_HoldsNoBuffer(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("idle\n", cancellationToken);
        await client.ReadLineAsync(cancellationToken);
        await Poll.UntilAsync(() => server.BuffersInUse == 0, cancellationToken);

        Assert.That(server.Counters.CurrentConnections, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_PartOfAMessageWaiting_HoldsOneBuffer(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("unfinished", cancellationToken);
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);
        await Poll.UntilAsync(() => server.BuffersInUse == 1, cancellationToken);
        await client.SendAsync("\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("UNFINISHED"));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_MessageHalfSent_HandlerHasItsLastWordThenStreamEnds(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("whole\nhal", cancellationToken);
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("WHOLE"));
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);

        Task stop = server.StopAsync(cancellationToken);
        string rest = await client.ReadToEndAsync(cancellationToken);
        client.Socket.Shutdown(SocketShutdown.Send);
        await stop;

        Assert.That(rest, Is.EqualTo("unfinished: hal\n"));
        Assert.That(server.StopCutShort, Is.False);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_HalfSentMessageWrittenBackFromTheReceivedBytes_ClientGetsThemBeforeStreamEnds(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("say hal", cancellationToken);
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);

        Task stop = server.StopAsync(cancellationToken);
        string rest = await client.ReadToEndAsync(cancellationToken);
        client.Socket.Shutdown(SocketShutdown.Send);
        await stop;

        Assert.That(rest, Is.EqualTo("hal"));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_RequestInFlight_ReplySentBeforeStreamEnds(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("wait\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);

        Task stop = server.StopAsync(cancellationToken);
        handler.Gate.SetResult();
        string rest = await client.ReadToEndAsync(cancellationToken);
        client.Socket.Shutdown(SocketShutdown.Send);
        await stop;

        Assert.That(rest, Is.EqualTo("done\n"));
        Assert.That(server.StopCutShort, Is.False);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task OnClosed_ClientCloses_CalledOnceWithItsState(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using (LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await client.SendAsync("count\n", cancellationToken);
            await client.ReadLineAsync(cancellationToken);
        }

        int lines = await handler.Closed.Task.WaitAsync(cancellationToken);

        Assert.That(lines, Is.EqualTo(1));
    }

    /// <summary>A send that does not wait.</summary>
    /// <returns>Whether the kernel took any of it.</returns>
    private static bool TrySend(Socket socket, byte[] data, ref long sent)
    {
        sent += socket.Send(data, 0, data.Length, SocketFlags.None, out SocketError error);
        Assert.That(error, Is.EqualTo(SocketError.Success).Or.EqualTo(SocketError.WouldBlock));
        return error == SocketError.Success;
    }

    /// <summary>Starts a server with <paramref name="handler"/> and measures what it allocates per request of
    /// <paramref name="batch"/> (see <see cref="TcpAllocationMeter"/>).</summary>
    private static async Task<double> ServerBytesPerRequestAsync(TcpConnectionHandler handler, Action<TcpServerOptions>? configure, byte[] batch, (int Requests, int ReplyLines) perBatch, double goal, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(handler, configure, cancellationToken);
        return await Task.Run(
            () => TcpAllocationMeter.ServerBytesPerRequest(server.LocalEndPoint!, batch, perBatch.Requests, perBatch.ReplyLines, goal),
            cancellationToken);
    }

    private static async Task<TcpServer> StartAsync(TcpConnectionHandler handler, Action<TcpServerOptions>? configure = null, CancellationToken cancellationToken = default, ILogger? logger = null)
    {
        var options = new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 };
        configure?.Invoke(options);
        return await Started.StartAsync(new TcpServer(options, handler, logger ?? NullLogger.Instance), cancellationToken);
    }
}
