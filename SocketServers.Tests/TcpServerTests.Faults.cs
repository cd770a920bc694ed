using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using PoolLib.Tests;

namespace SocketServers.Tests;

// Faults an outside test found: how a graceful end meets a client still sending, and whose failure an exception is.
public sealed partial class TcpServerTests
{
    // The stop wakes a loop that waits holding part of a message; ending the stream must not also end the wait for the
    // client's close, or the socket closes under the client's next send and resets it.
    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_MessageHalfSentThenClientSendsMore_DroppedWithoutResetUntilTheClientCloses(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("hal", cancellationToken);
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);

        Task stop = server.StopAsync(cancellationToken);
        string rest = await client.ReadToEndAsync(cancellationToken);
        SocketError[] later = [.. Enumerable.Range(0, 3).Select(_ => SendNow(client.Socket, "more\n"u8.ToArray()))];
        client.Socket.Shutdown(SocketShutdown.Send);
        await stop;

        Assert.That(rest, Is.EqualTo("unfinished: hal\n"));
        Assert.That(later, Is.All.EqualTo(SocketError.Success), "the client's later sends were dropped, not reset");
        Assert.That(server.Counters.Drops, Is.Zero);
    }

    // After the handler's close the server reads nothing more: what the client sends on is never read, and once the
    // linger is over the connection is reset.
    [Test]
    [CancelAfter(20_000)]
    public async Task Close_FromAnotherThreadWhileHalfAMessageWaits_StreamEndsThenClientsLaterSendsResetTheConnection(CancellationToken cancellationToken)
    {
        var connections = new ConnectionCapturingHandler();
        await using var server = await StartAsync(connections, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("hal", cancellationToken);
        TcpConnection connection = await connections.PartialSeen.Task.WaitAsync(cancellationToken);

        connection.Close();
        string rest = await client.ReadToEndAsync(cancellationToken);
        SocketError later = await client.Socket.SendUntilFailedAsync(cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);

        Assert.That(rest, Is.Empty);
        Assert.That(later, Is.EqualTo(SocketError.ConnectionReset).Or.EqualTo(SocketError.Shutdown));
        Assert.That(server.Counters.Drops, Is.EqualTo(1), "reset by the server");
    }

    // An ObjectDisposedException or an IOException over a SocketException that the handler throws for its own reasons
    // is its failure, logged as a warning with the exception, not a connection the client lost.
    [TestCase("throw disposed\n", typeof(ObjectDisposedException))]
    [TestCase("throw reset\n", typeof(IOException))]
    [CancelAfter(10_000)]
    public async Task Handler_ThrowsItsOwnDisposedOrSocketIOException_LoggedAsTheHandlersFailure(string request, Type thrown, CancellationToken cancellationToken)
    {
        var logger = new RecordingLogger();
        await using var server = await StartAsync(new ScriptedHandler(), cancellationToken: cancellationToken, logger: logger);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(request, cancellationToken);
        await client.ReadToEndAsync(cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);

        Assert.That(logger.Exceptions.Where(entry => entry.Level == LogLevel.Warning).Select(entry => entry.Exception?.GetType()), Has.Member(thrown));
        Assert.That(logger.Lines.Select(line => line.Message), Has.None.Contains(" lost: "));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task ConnectionClosed_StopGracePeriodEndsWhileTheHandlerAwaitsIt_CancelledAndTheStopCompletes(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("await closed\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);

        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(cancellationToken);

        Assert.That(await handler.CutOffSeen.Task.WaitAsync(cancellationToken), Is.True);
        Assert.That(server.StopCutShort, Is.True);

        // The stop may have completed on its one-second bound, under load, before the call returned: it returns now.
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);
    }

    // A handler that passes ConnectionClosed to its work sees that work cancelled: the cut-off, not its failure.
    [Test]
    [CancelAfter(20_000)]
    public async Task ConnectionClosed_HandlersWorkCancelledByTheCutOff_NotCountedAsItsFailure(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        var logger = new RecordingLogger();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken, logger: logger);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("await closed then throw\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);

        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(cancellationToken);
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);

        Assert.That(meter.Recorded("socketservers.errors"), Is.Empty);
        Assert.That(logger.Lines.Where(line => line.Level >= LogLevel.Warning).Select(line => line.Message), Has.None.Contains("failed"));
    }

    // A handler call that ignores the cut-off must not hold the stop (nor the host's shutdown) for as long as it runs.
    [Test]
    [CancelAfter(20_000)]
    public async Task StopAsync_HandlerCallIgnoresTheCutOff_CompletesWithoutItAndTheCallEndsLater(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        var logger = new RecordingLogger();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken, logger: logger);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("wait\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);

        await server.StopAsync(new CancellationToken(canceled: true)).WaitAsync(cancellationToken);
        bool callStillRunning = server.Counters.CurrentConnections == 1;
        handler.Gate.SetResult();
        await Poll.UntilAsync(() => server.Counters.CurrentConnections == 0, cancellationToken);

        Assert.That(callStillRunning, Is.True, "the stop completed while the handler's call ran");
        Assert.That(logger.Lines, Has.Some.Matches<(LogLevel Level, string Message)>(line => line.Level == LogLevel.Warning && line.Message.Contains("handler calls still running")));
    }

    // The sweep judged a connection by what it received, so one reading a long reply, at far more than the minimum
    // rate, was evicted for a waiting client mid-reply, and its client saw a clean end of stream.
    [Test]
    [CancelAfter(60_000)]
    public async Task MinDataRate_ClientReadingALongReplyWhileAnotherWaits_NotEvictedMidReply(CancellationToken cancellationToken)
    {
        // More than the kernel's buffers hold, so that the server is still sending while the sweeps judge it.
        const int Chunks = 320;
        await using var server = await StartAsync(
            new ScriptedHandler(),
            options =>
            {
                options.MaxConnections = 1;
                options.SlowConnectionWindow = TimeSpan.FromSeconds(1);
            },
            cancellationToken);
        using LineClient reading = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await reading.SendAsync($"stream {Chunks}\n", cancellationToken);
        using LineClient waiting = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await waiting.SendAsync("next\n", cancellationToken);

        // Paced well above the minimum rate, so that the reply outlasts several sweeps.
        long received = await ReadPacedToNewlineAsync(reading.Socket, TimeSpan.FromMilliseconds(5), cancellationToken);

        reading.Socket.Shutdown(SocketShutdown.Send);
        Assert.That(received, Is.EqualTo(((long)Chunks * ScriptedHandler.StreamChunkSize) + 1), "the whole reply arrived");
        Assert.That(await waiting.ReadLineAsync(cancellationToken), Is.EqualTo("NEXT"), "the waiting client was served after it");
    }

    // A send waiting for room in the kernel's queue completes only once about a third of it is free: for a client reading
    // a long reply steadily, far above the minimum rate, that was seconds or minutes away, and the connection looked
    // idle and slow meanwhile, so it was closed idle or evicted mid-reply. The sweep now sees the queue drain.
    [TestCase("idle timeout")]
    [TestCase("eviction")]
    [CancelAfter(60_000)]
    public async Task ClientReadingALongReplySlowlyButSteadily_NeitherClosedIdleNorEvicted(string cutOff, CancellationToken cancellationToken)
    {
        const int ReplyBytes = 16 * 1024 * 1024;
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, CutOffAfter(cutOff, TimeSpan.FromSeconds(1)), cancellationToken);
        using LineClient reading = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken, receiveBufferSize: 16 * 1024);
        await reading.SendAsync($"big {ReplyBytes}\n", cancellationToken);
        await handler.WriteBlocked.Task.WaitAsync(cancellationToken);
        using LineClient? waiting = cutOff == "eviction" ? await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken) : null;
        if (waiting is not null)
        {
            await waiting.SendAsync("next\n", cancellationToken);
        }

        // 4 KiB every 50 ms, 80 KiB a second, for 3 s: three idle timeouts, or three windows with a client waiting.
        byte[] buffer = new byte[4 * 1024];
        long received = 0;
        for (int read = 0; read < 60; read++)
        {
            received += await reading.Socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken);
            await Task.Delay(TimeSpan.FromMilliseconds(50), cancellationToken);
        }

        Assert.That(server.Counters.Drops, Is.Zero, "neither closed idle nor evicted while it read");
        received += await ReadPacedToNewlineAsync(reading.Socket, TimeSpan.Zero, cancellationToken);
        reading.Socket.Shutdown(SocketShutdown.Send);
        Assert.That(received, Is.EqualTo(ReplyBytes + 1), "the whole reply arrived");
        if (waiting is not null)
        {
            Assert.That(await waiting.ReadLineAsync(cancellationToken), Is.EqualTo("NEXT"), "the waiting client was served after it");
        }
    }

    // A write that failed on the client's reset ended the connection, though the handler caught its exception and
    // returned; the next receive then saw the socket shut, and the end was counted as the client's graceful close.
    [Test]
    [CancelAfter(20_000)]
    public async Task Drops_ClientResetWhileTheHandlerWorksAndItCatchesTheWriteFailure_CountedAsADrop(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using (LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await client.SendAsync($"wait then write {4 * 1024 * 1024} catching\n", cancellationToken);
            await handler.Waiting.Task.WaitAsync(cancellationToken);
            client.Socket.LingerState = new LingerOption(enable: true, seconds: 0);
        }

        handler.Gate.SetResult();
        await handler.WriteFailed.Task.WaitAsync(cancellationToken);
        await handler.Closed.Task.WaitAsync(cancellationToken);

        Assert.That(server.Counters.Drops, Is.EqualTo(1));
    }

    // A cut-off mid-reply shut the socket, and the kernel sent its end of stream after the part of the reply it held: the
    // client took a cut reply for a whole one. Linger 0 at the close was not enough while the handler, having caught the
    // write's failure, went on working: the end of stream came first. A cut-off mid-reply now resets at once.
    [TestCase("idle timeout")]
    [TestCase("eviction")]
    [CancelAfter(30_000)]
    public async Task CutOff_WhileTheReplyIsStillSentAndTheHandlerGoesOn_ClientGetsAReset(string cutOff, CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, CutOffAfter(cutOff, TimeSpan.FromMilliseconds(200)), cancellationToken);
        using LineClient reading = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken, receiveBufferSize: 4 * 1024);
        await reading.SendAsync("big 67108864 catching\n", cancellationToken);
        await handler.WriteBlocked.Task.WaitAsync(cancellationToken);
        using LineClient? waiting = cutOff == "eviction" ? await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken) : null;
        await handler.WriteFailed.Task.WaitAsync(cancellationToken);

        var buffer = new byte[1024 * 1024];
        SocketException? reset = null;
        try
        {
            while (await reading.Socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken) > 0)
            {
            }
        }
        catch (SocketException exception)
        {
            reset = exception;
        }
        finally
        {
            handler.Gate.SetResult();
        }

        Assert.That(reset?.SocketErrorCode, Is.EqualTo(SocketError.ConnectionReset), "a reset, not the end of stream after a cut reply");
        if (waiting is not null)
        {
            await waiting.SendAsync("next\n", cancellationToken);
            Assert.That(await waiting.ReadLineAsync(cancellationToken), Is.EqualTo("NEXT"), "served in the place the eviction freed");
        }
    }

    // A handler awaiting its own work owes the client a reply: the connection is busy, not idle. The witness connects
    // after the request, so the sweep that closes it idle would have closed the busy one too.
    [Test]
    [CancelAfter(20_000)]
    public async Task IdleTimeout_HandlerAwaitingItsWorkPastTheTimeout_ConnectionKeptAndTheReplyArrives(CancellationToken cancellationToken)
    {
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, options => options.IdleTimeout = TimeSpan.FromMilliseconds(200), cancellationToken);
        using LineClient busy = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await busy.SendAsync("wait\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);
        using LineClient witness = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        Assert.That(await witness.ReadToEndAsync(cancellationToken), Is.Empty, "the silent witness was closed idle");
        handler.Gate.SetResult();

        Assert.That(await busy.ReadLineAsync(cancellationToken), Is.EqualTo("done"));
    }

    // One write of a long reply went out as one send, counted only once the kernel took all of it: a client reading it
    // steadily, far above the minimum rate, looked as if it moved nothing, and was evicted mid-reply.
    [Test]
    [CancelAfter(60_000)]
    public async Task MinDataRate_ClientReadingOneLongWriteWhileAnotherWaits_NotEvictedMidReply(CancellationToken cancellationToken)
    {
        const int ReplyBytes = 8 * 1024 * 1024;
        var handler = new ScriptedHandler();
        handler.Gate.SetResult();
        await using var server = await StartAsync(
            handler,
            options =>
            {
                options.MaxConnections = 1;
                options.SlowConnectionWindow = TimeSpan.FromSeconds(1);
            },
            cancellationToken);
        using LineClient reading = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken, receiveBufferSize: 64 * 1024);
        await reading.SendAsync($"wait then write {ReplyBytes}\n", cancellationToken);
        using LineClient waiting = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await waiting.SendAsync("next\n", cancellationToken);

        long received = await ReadPacedToNewlineAsync(reading.Socket, TimeSpan.FromMilliseconds(10), cancellationToken);
        reading.Socket.Shutdown(SocketShutdown.Send);

        Assert.That(received, Is.EqualTo(ReplyBytes + 1), "the whole reply arrived");
        Assert.That(await waiting.ReadLineAsync(cancellationToken), Is.EqualTo("NEXT"), "the waiting client was served after it");
    }

    // The idle clock kept the request's time through the handler's work, so the reply's first send, once it waited for
    // the client, found the connection idle past the timeout and closed it mid-reply.
    [Test]
    [CancelAfter(60_000)]
    public async Task IdleTimeout_HandlerWorksPastTheTimeoutThenItsReplyWaitsForTheClient_ReplyArrivesWhole(CancellationToken cancellationToken)
    {
        const int ReplyBytes = 8 * 1024 * 1024;
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, options => options.IdleTimeout = TimeSpan.FromSeconds(1), cancellationToken);
        using LineClient busy = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken, receiveBufferSize: 64 * 1024);
        await busy.SendAsync($"wait then write {ReplyBytes}\n", cancellationToken);
        await handler.Waiting.Task.WaitAsync(cancellationToken);
        using LineClient witness = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        Assert.That(await witness.ReadToEndAsync(cancellationToken), Is.Empty, "the silent witness was closed idle");

        // Paced so that the kernel's buffers fill and each send waits for the client, but never near the timeout.
        handler.Gate.SetResult();
        long received = await ReadPacedToNewlineAsync(busy.Socket, TimeSpan.FromMilliseconds(5), cancellationToken);

        Assert.That(received, Is.EqualTo(ReplyBytes + 1), "the whole reply arrived");
    }

    /// <summary>Reads until a newline ends a read, pausing between reads; the bytes read, short if the stream ended.</summary>
    private static async Task<long> ReadPacedToNewlineAsync(Socket socket, TimeSpan pause, CancellationToken cancellationToken)
    {
        long received = 0;
        byte[] buffer = new byte[ScriptedHandler.StreamChunkSize];
        while (await socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken) is var count and > 0)
        {
            received += count;
            if (buffer[count - 1] == (byte)'\n')
            {
                break;
            }

            await Task.Delay(pause, cancellationToken);
        }

        return received;
    }

    /// <summary>Options under which the server cuts a connection off: closed idle after <paramref name="after"/>, or (for
    /// <c>"eviction"</c>) evicted for a waiting client when one window of <paramref name="after"/> finds it slow.</summary>
    private static Action<TcpServerOptions> CutOffAfter(string cutOff, TimeSpan after) => options =>
    {
        if (cutOff == "idle timeout")
        {
            options.IdleTimeout = after;
        }
        else
        {
            (options.MaxConnections, options.SlowConnectionWindow) = (1, after);
        }
    };

    /// <summary>A send that does not wait; the error the kernel gave, which is a reset's once the peer has closed.</summary>
    private static SocketError SendNow(Socket socket, byte[] data)
    {
        socket.Send(data, 0, data.Length, SocketFlags.None, out SocketError error);
        return error;
    }

    /// <summary>Hands the test the connection whose message is left unfinished; consumes only whole lines.</summary>
    private sealed class ConnectionCapturingHandler : TcpConnectionHandler
    {
        public TaskCompletionSource<TcpConnection> PartialSeen { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public override ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            int consumed = data.Span.LastIndexOf((byte)'\n') + 1;
            if (consumed < data.Length)
            {
                PartialSeen.TrySetResult(connection);
            }

            return ValueTask.FromResult(consumed);
        }
    }
}
