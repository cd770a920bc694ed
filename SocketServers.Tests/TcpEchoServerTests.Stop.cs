using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Time.Testing;
using PoolLib.Tests;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// A stop: in-flight echoes finish within the grace period, the rest are cut off, and every args comes back.
public sealed partial class TcpEchoServerTests
{
    [Test]
    [CancelAfter(30_000)]
    public async Task StopAsync_ClientsConnectedWithTrafficInFlight_CompletesWithAllSlotsBack(CancellationToken cancellationToken)
    {
        var server = await StartAsync(options => options.StopGracePeriod = TimeSpan.FromSeconds(2), cancellationToken);
        IPEndPoint endPoint = server.LocalEndPoint!;
        var idleClients = new List<Socket>();
        var busyStarted = new CountdownEvent(8);
        try
        {
            for (int i = 0; i < 4; i++)
            {
                idleClients.Add(await SocketTestExtensions.ConnectTcpAsync(endPoint, cancellationToken));
            }

            Task[] busy = Enumerable.Range(0, 8).Select(_ => Task.Run(() => EchoUntilClosedAsync(endPoint, busyStarted, cancellationToken), cancellationToken)).ToArray();
            Assert.That(busyStarted.Wait(TimeSpan.FromSeconds(10), cancellationToken), Is.True);

            await server.StopAsync(cancellationToken);

            SocketServerCounters counters = server.Counters;
            Assert.That(counters.CurrentConnections, Is.Zero);
            Assert.That(counters.PoolAvailableCount, Is.EqualTo(counters.PoolTotalCount), "every args back in the pool");
            Assert.That(server.StopAsync(cancellationToken).IsCompletedSuccessfully, Is.True, "a second stop is harmless");
            await Task.WhenAll(busy);
            foreach (Socket idle in idleClients)
            {
                Assert.That(await idle.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken), Is.Zero);
            }

            var refused = await Assert.ThrowsAsync<SocketException>(async () => (await SocketTestExtensions.ConnectTcpAsync(endPoint, cancellationToken)).Dispose());
            Assert.That(refused!.SocketErrorCode, Is.EqualTo(SocketError.ConnectionRefused));
        }
        finally
        {
            idleClients.ForEach(client => client.Dispose());
            await server.DisposeAsync();
            busyStarted.Dispose();
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task StopAsync_ClientNeverReads_CompletesAndCutsTheClientOff(CancellationToken cancellationToken)
    {
        var server = await StartAsync(options => options.StopGracePeriod = TimeSpan.FromMilliseconds(200), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        try
        {
            // The client neither reads nor closes, so the connection cannot end before the grace period does. Whether
            // the echo is already blocked in its send when the stop begins (the connection is then reset) or the stop
            // finds it between two reads (it ends its stream and drops what comes) depends on scheduling, so the test
            // asserts what holds either way.
            Task writer = await WriteWithoutReadingAsync(server, client, cancellationToken);

            await server.StopAsync(cancellationToken);

            Assert.That(server.Counters.TotalConnections, Is.EqualTo(1));
            await AssertCutOffWithEveryArgsBackAsync(server, client, writer, cancellationToken);
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    // A client left connected and idle that never closes (nc, kept open) must not hold the stop for its grace period,
    // here a day: the stop ends its stream and closes it at once, a clean stop with nothing cut short. The connection's
    // clock is the test's, moved a second on once the echo is over.
    [Test]
    [CancelAfter(30_000)]
    public async Task StopAsync_ClientIdle_ClosesItAtOnceWithEndOfStream(CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        TcpEchoServerOptions options = LoopbackOptions();
        options.StopGracePeriod = TimeSpan.FromDays(1);
        options.IdleTimeout = Timeout.InfiniteTimeSpan;
        var server = await Started.StartAsync(new TcpEchoServer(options, logger: null, time), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        try
        {
            await client.AssertEchoOnAsync(cancellationToken);
            await Poll.UntilAsync(() => server.BuffersInUse == 0, cancellationToken); // the echo's send is over: the connection idles
            time.Advance(TimeSpan.FromSeconds(1));

            await server.StopAsync(cancellationToken);

            Assert.That(await client.ReceiveToEndAsync(cancellationToken), Is.Empty, "end of stream, not a reset");
            Assert.That(server.StopCutShort, Is.False);
            Assert.That((server.Counters.CurrentConnections, server.Counters.Drops), Is.EqualTo((0, 0L)), "closed, and not counted as a drop");
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    // A graceful stop reads nothing more, sends what it owes, ends its stream, and discards what the client still
    // sends until the client closes. Here the client has filled both directions when the stop begins, reads only after
    // that, and writes until it reads the end: it must get every byte counted as echoed, and nothing may be reset.
    [Test]
    [CancelAfter(60_000)]
    public async Task StopAsync_ClientStillSending_GetsEveryEchoedByteThenEndOfStreamWithoutReset(CancellationToken cancellationToken)
    {
        var server = await StartAsync(options => options.StopGracePeriod = TimeSpan.FromSeconds(30), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        try
        {
            var endOfStream = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            Task<SocketError> writer = WriteCountingUntilAsync(client, endOfStream.Task, cancellationToken);
            await Poll.UntilAsync(() => server.Counters.MessagesHandled > 0, cancellationToken);

            Task stop = server.StopAsync(cancellationToken);
            (long received, SocketError readError) = await ReadCountingToEndAsync(client, cancellationToken);
            endOfStream.SetResult();
            SocketError writeError = await writer;
            await stop;

            Assert.That(readError, Is.EqualTo(SocketError.Success), "the client read to the end of the stream");
            Assert.That(received, Is.EqualTo(server.Counters.BytesSent), "every byte counted as echoed reached the client");
            Assert.That(writeError, Is.EqualTo(SocketError.Success), "the client's writes were not reset");
            Assert.That(server.Counters.Drops, Is.Zero, "the connection ended gracefully");
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    // The first stop passes no token and would give the echo a day; the host's later stop, with its shutdown
    // timeout as a token, must still be able to end that grace period.
    [Test]
    [CancelAfter(30_000)]
    public async Task StopAsync_LaterCallsTokenCancelled_EndsTheGracePeriodOfTheStopUnderWay(CancellationToken cancellationToken)
    {
        var server = await StartAsync(options => options.StopGracePeriod = TimeSpan.FromDays(1), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        try
        {
            // The client never reads or closes: the connection cannot drain before the grace period ends.
            Task writer = await WriteWithoutReadingAsync(server, client, cancellationToken);
            Task first = server.StopAsync();
            using var shutdownTimeout = new CancellationTokenSource();
            Task second = server.StopAsync(shutdownTimeout.Token);
            Assert.That(first.IsCompleted, Is.False, "the connection holds the first stop");

            await shutdownTimeout.CancelAsync();
            await Task.WhenAll(first, second).WaitAsync(cancellationToken);

            await AssertCutOffWithEveryArgsBackAsync(server, client, writer, cancellationToken);
        }
        finally
        {
            // Closing the client ends the connection, so that a stop whose grace period was not cut still ends.
            client.Dispose();
            await server.DisposeAsync();
        }
    }

    /// <summary>Sends and checks echoes until the server ends the stream; a reset fails the test.</summary>
    private static async Task EchoUntilClosedAsync(IPEndPoint endPoint, CountdownEvent started, CancellationToken cancellationToken)
    {
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(endPoint, cancellationToken);
        byte[] message = new byte[16 * KiB];
        byte[] echo = new byte[message.Length];
        bool signalled = false;
        while (true)
        {
            Random.Shared.NextBytes(message);
            await client.SendAllAsync(message, cancellationToken);
            int received = await client.ReceiveExactlyAsync(echo, cancellationToken);

            // The stop echoes what it read, maybe part of the message, then ends the stream.
            Assert.That(echo.AsSpan(0, received).SequenceEqual(message.AsSpan(0, received)), Is.True, "the echo so far is byte-exact");
            if (received < message.Length)
            {
                return;
            }

            if (!signalled)
            {
                signalled = true;
                started.Signal();
            }
        }
    }

    /// <summary>Writes 64 KiB chunks of the running byte count (mod 251) until <paramref name="stop"/> completes, then
    /// shuts down its send side.</summary>
    /// <returns>How the writes ended: <see cref="SocketError.Success"/>, or the error one failed with.</returns>
    private static async Task<SocketError> WriteCountingUntilAsync(Socket client, Task stop, CancellationToken cancellationToken)
    {
        byte[] chunk = new byte[64 * KiB];
        long written = 0;
        try
        {
            while (!stop.IsCompleted)
            {
                for (int i = 0; i < chunk.Length; i++)
                {
                    chunk[i] = (byte)((written + i) % 251);
                }

                await client.SendAllAsync(chunk, cancellationToken);
                written += chunk.Length;
            }

            client.Shutdown(SocketShutdown.Send);
            return SocketError.Success;
        }
        catch (SocketException ex)
        {
            return ex.SocketErrorCode;
        }
    }

    /// <summary>Reads to the end of the stream, 16 KiB at a time, checking that it is the running byte count (mod 251)
    /// that <see cref="WriteCountingUntilAsync"/> writes.</summary>
    /// <returns>The bytes read, and <see cref="SocketError.Success"/> or the error a read failed with.</returns>
    private static async Task<(long Received, SocketError Error)> ReadCountingToEndAsync(Socket client, CancellationToken cancellationToken)
    {
        byte[] buffer = new byte[16 * KiB];
        long total = 0;
        try
        {
            int received;
            while ((received = await client.ReceiveAsync(buffer, SocketFlags.None, cancellationToken)) > 0)
            {
                for (int i = 0; i < received; i++)
                {
                    Assert.That(buffer[i], Is.EqualTo((byte)((total + i) % 251)), $"byte {total + i} of the echo");
                }

                total += received;
            }

            return (total, SocketError.Success);
        }
        catch (SocketException ex)
        {
            return (total, ex.SocketErrorCode);
        }
    }

    /// <summary>Has <paramref name="client"/> write far more than the socket buffers hold and read nothing, so that
    /// the server's echo soon blocks in a send only the end of the grace period can end.</summary>
    /// <returns>The write, once the server has echoed part of it.</returns>
    private static async Task<Task> WriteWithoutReadingAsync(TcpEchoServer server, Socket client, CancellationToken cancellationToken)
    {
        Task writer = client.SendAllAsync(new byte[64 * MiB], cancellationToken);
        await Poll.UntilAsync(() => server.Counters.MessagesHandled > 0, cancellationToken);
        return writer;
    }

    /// <summary>After a stop that had to close a writing client at the end of the grace period: no connection is left,
    /// every args is back in the pool, the close counts as a drop, and the client's write and its reads come to an end
    /// (the write fails if the server reset the connection, or completes into the server's discarding).</summary>
    private static async Task AssertCutOffWithEveryArgsBackAsync(TcpEchoServer server, Socket client, Task writer, CancellationToken cancellationToken)
    {
        SocketServerCounters counters = server.Counters;
        Assert.That(counters.CurrentConnections, Is.Zero);
        Assert.That(counters.PoolAvailableCount, Is.EqualTo(counters.PoolTotalCount), "every args back in the pool");
        Assert.That(counters.Drops, Is.EqualTo(1), "closed at the end of the grace period, not by the client");
        await SocketTestExtensions.WithinAsync(
            async token =>
            {
                try
                {
                    await writer.WaitAsync(token);
                    await client.ReceiveToEndAsync(token);
                }
                catch (SocketException ex) when (ex.SocketErrorCode is SocketError.ConnectionReset or SocketError.Shutdown)
                {
                    // Reset by the server, whose stop found the echo blocked in its send.
                }
            },
            "the client's write and reads end",
            cancellationToken);
    }
}
