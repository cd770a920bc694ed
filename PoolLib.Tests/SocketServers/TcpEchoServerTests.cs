using System.Net;
using System.Net.Sockets;
using SocketServers;

namespace PoolLib.Tests.SocketServers;

public sealed partial class TcpEchoServerTests
{
    private const int KiB = 1024;
    private const int MiB = 1024 * KiB;

    [Test]
    public void Constructor_NullOptions_ThrowsArgumentNull()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => _ = new TcpEchoServer(null!));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_PortZero_ListensOnRealPort(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);

        Assert.That(server.LocalEndPoint, Is.Not.Null);
        Assert.That(server.LocalEndPoint!.Address, Is.EqualTo(IPAddress.Loopback));
        Assert.That(server.LocalEndPoint.Port, Is.Not.Zero);
        Assert.That(server.IsRunning, Is.True);
        await SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint, 100, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_Twice_ThrowsInvalidOperation(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);

        await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync(cancellationToken));
        Assert.That(server.IsRunning, Is.True);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_PortInUse_ThrowsIOExceptionSayingInUse(CancellationToken cancellationToken)
    {
        await using var first = await StartAsync(cancellationToken: cancellationToken);
        await using var second = new TcpEchoServer(new TcpEchoServerOptions { Port = first.LocalEndPoint!.Port });

        var exception = await Assert.ThrowsAsync<IOException>(() => second.StartAsync(cancellationToken));

        Assert.That(exception!.Message, Does.Contain("already in use").And.Contain(first.LocalEndPoint.ToString()));
        Assert.That(exception.InnerException, Is.InstanceOf<SocketException>()
            .With.Property(nameof(SocketException.SocketErrorCode)).EqualTo(SocketError.AddressAlreadyInUse));
        Assert.That(second.IsRunning, Is.False);
        await SocketTestExtensions.AssertEchoesAsync(first.LocalEndPoint, 10, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_AfterDispose_ThrowsObjectDisposed(CancellationToken cancellationToken)
    {
        var server = new TcpEchoServer(LoopbackOptions());
        await server.DisposeAsync();

        await Assert.ThrowsAsync<ObjectDisposedException>(() => server.StartAsync(cancellationToken));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StopAsync_BeforeStart_DoesNothingAndStartThenThrows(CancellationToken cancellationToken)
    {
        await using var server = new TcpEchoServer(LoopbackOptions());

        await server.StopAsync(cancellationToken);

        Assert.That(server.LocalEndPoint, Is.Null);
        await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync(cancellationToken));
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task Echo_HundredClientsRandomSizes_EchoesByteExact(CancellationToken cancellationToken)
    {
        const int Clients = 100;
        const int Messages = 100;
        await using var server = await StartAsync(cancellationToken: cancellationToken);
        long bytesSent = 0;
        int mismatches = 0;

        async Task RunClientAsync(int seed)
        {
            // Sizes are log-uniform from 1 B to 64 KiB (small and large messages alike), both ends included.
            var random = new Random(seed);
            using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
            byte[] message = new byte[64 * KiB];
            byte[] echo = new byte[64 * KiB];
            for (int i = 0; i < Messages; i++)
            {
                int size = i switch
                {
                    0 => 1,
                    1 => 64 * KiB,
                    _ => (int)Math.Pow(2, random.NextDouble() * 16),
                };
                random.NextBytes(message.AsSpan(0, size));
                await client.SendAllAsync(message.AsMemory(0, size), cancellationToken);
                int received = await client.ReceiveExactlyAsync(echo.AsMemory(0, size), cancellationToken);
                if (received != size || !echo.AsSpan(0, size).SequenceEqual(message.AsSpan(0, size)))
                {
                    Interlocked.Increment(ref mismatches);
                }

                Interlocked.Add(ref bytesSent, size);
            }
        }

        await Task.WhenAll(Enumerable.Range(0, Clients).Select(seed => Task.Run(() => RunClientAsync(seed), cancellationToken)));
        await WaitForIdleAsync(server, cancellationToken);

        Assert.That(mismatches, Is.Zero);
        EchoServerCounters counters = server.Counters;
        Assert.That(counters.BytesEchoed, Is.EqualTo(bytesSent));
        Assert.That(counters.TotalConnections, Is.EqualTo(Clients));
        Assert.That(counters.Drops, Is.Zero);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Echo_ClientResetsMidMessage_ServerKeepsServingAndReturnsSlot(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);
        using (Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken))
        {
            byte[] half = new byte[256 * KiB];
            Random.Shared.NextBytes(half);
            await client.SendAllAsync(half, cancellationToken);
            client.LingerState = new LingerOption(true, 0);
            client.Close(); // RST with echoes unread: the server is mid-message
        }

        await WaitForIdleAsync(server, cancellationToken);

        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        await AssertStillServesAsync(server, cancellationToken);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Echo_ClientHalfCloses_ReceivesAllBytesThenEndOfStream(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);
        byte[] data = new byte[3 * MiB + 17];
        Random.Shared.NextBytes(data);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        Task<byte[]> reader = client.ReceiveToEndAsync(cancellationToken);
        await client.SendAllAsync(data, cancellationToken);
        client.Shutdown(SocketShutdown.Send);
        byte[] echoed = await reader;

        Assert.That(echoed, Has.Length.EqualTo(data.Length));
        Assert.That(echoed.AsSpan().SequenceEqual(data), Is.True, "every byte echoed in order, then end of stream");
        await WaitForIdleAsync(server, cancellationToken);
        Assert.That(server.Counters.Drops, Is.Zero);
        await AssertStillServesAsync(server, cancellationToken);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task IdleTimeout_ClientSendsNothing_ServerClosesConnection(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => options.IdleTimeout = TimeSpan.FromMilliseconds(200), cancellationToken);
        using Socket idle = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        int received = await idle.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken);

        Assert.That(received, Is.Zero, "the server closed the idle connection");
        await WaitForIdleAsync(server, cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        await AssertStillServesAsync(server, cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task MaxConnections_MoreClientsThanCap_ServesAtMostCapAtOnceThenTheRest(CancellationToken cancellationToken)
    {
        const int Cap = 4;
        const int Waiting = 8;
        await using var server = await StartAsync(options => options.MaxConnections = Cap, cancellationToken);
        var releaseFirst = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);

        async Task RunClientAsync(Task holdBeforeClose, TaskCompletionSource? firstEchoed)
        {
            using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
            byte[] message = new byte[1000];
            byte[] echo = new byte[1000];
            for (int i = 0; i < 5; i++)
            {
                Random.Shared.NextBytes(message);
                await client.SendAllAsync(message, cancellationToken);
                Assert.That(await client.ReceiveExactlyAsync(echo, cancellationToken), Is.EqualTo(message.Length));
                Assert.That(echo, Is.EqualTo(message));
                firstEchoed?.TrySetResult();
            }

            await holdBeforeClose.WaitAsync(cancellationToken);
            client.Shutdown(SocketShutdown.Send);
            Assert.That(await client.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken), Is.Zero);
        }

        // The first Cap clients are served and stay connected: the server is full.
        var served = Enumerable.Range(0, Cap).Select(_ => new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).ToArray();
        Task[] first = served.Select(echoed => RunClientAsync(releaseFirst.Task, echoed)).ToArray();
        await Task.WhenAll(served.Select(echoed => echoed.Task)).WaitAsync(cancellationToken);

        // More clients connect while the server is full: it accepts none of them, and they wait in the listen backlog
        // (which Linux reports) until the first ones leave.
        Task[] rest = Enumerable.Range(0, Waiting).Select(_ => RunClientAsync(Task.CompletedTask, null)).ToArray();
        if (OperatingSystem.IsLinux())
        {
            await SocketTestExtensions.WithinAsync(
                token => Poll.UntilAsync(() => server.QueuedConnections == Waiting, token), "every client over the cap waits in the backlog", cancellationToken);
        }

        Assert.That(server.Counters.TotalConnections, Is.EqualTo(Cap), "no client accepted past the cap");
        releaseFirst.SetResult();
        await Task.WhenAll(first.Concat(rest));
        await WaitForIdleAsync(server, cancellationToken);

        EchoServerCounters counters = server.Counters;
        Assert.That(counters.PeakConnections, Is.EqualTo(Cap), "never more connections served at once than the cap");
        Assert.That(counters.TotalConnections, Is.EqualTo(Cap + Waiting));
        Assert.That(counters.Drops, Is.Zero);
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task Echo_25MiBBurstThrough4KiBBuffer_FullyEchoed(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => options.BufferSize = 4 * KiB, cancellationToken);
        byte[] data = new byte[25 * MiB];
        new Random(25).NextBytes(data);
        byte[] echoed = new byte[data.Length];
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        // The whole burst is written at once; the reader runs beside it so neither side's buffers fill for good.
        Task writer = client.SendAllAsync(data, cancellationToken);
        int received = await client.ReceiveExactlyAsync(echoed, cancellationToken);
        await writer;

        Assert.That(received, Is.EqualTo(data.Length));
        Assert.That(echoed.AsSpan().SequenceEqual(data), Is.True);
        client.Shutdown(SocketShutdown.Send);
        Assert.That(await client.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken), Is.Zero);
        await WaitForIdleAsync(server, cancellationToken);
        Assert.That(server.Counters.BytesEchoed, Is.EqualTo(data.Length));
    }

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

            EchoServerCounters counters = server.Counters;
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
            await Poll.UntilAsync(() => server.Counters.MessagesEchoed > 0, cancellationToken);

            Task stop = server.StopAsync(cancellationToken);
            (long received, SocketError readError) = await ReadCountingToEndAsync(client, cancellationToken);
            endOfStream.SetResult();
            SocketError writeError = await writer;
            await stop;

            Assert.That(readError, Is.EqualTo(SocketError.Success), "the client read to the end of the stream");
            Assert.That(received, Is.EqualTo(server.Counters.BytesEchoed), "every byte counted as echoed reached the client");
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

    [Test]
    [CancelAfter(10_000)]
    public async Task DisposeAsync_Running_StopsListening(CancellationToken cancellationToken)
    {
        var server = await StartAsync(cancellationToken: cancellationToken);
        IPEndPoint endPoint = server.LocalEndPoint!;

        await server.DisposeAsync();
        await server.DisposeAsync();

        Assert.That(server.IsRunning, Is.False);
        await Assert.ThrowsAsync<SocketException>(async () => (await SocketTestExtensions.ConnectTcpAsync(endPoint, cancellationToken)).Dispose());
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Connections_IdleAfterEchoes_HoldNoBuffer(CancellationToken cancellationToken)
    {
        const int Clients = 20;
        await using var server = await StartAsync(cancellationToken: cancellationToken);
        var clients = new List<Socket>();
        try
        {
            for (int i = 0; i < Clients; i++)
            {
                Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
                clients.Add(client);
                byte[] message = [1, 2, 3, (byte)i];
                await client.SendAllAsync(message, cancellationToken);
                byte[] echo = new byte[message.Length];
                await client.ReceiveExactlyAsync(echo, cancellationToken);
                Assert.That(echo, Is.EqualTo(message));
            }

            await Poll.UntilAsync(() => server.BuffersInUse == 0, cancellationToken);

            Assert.That(server.Counters.CurrentConnections, Is.EqualTo(Clients));
            Assert.That(server.BuffersInUse, Is.Zero);
        }
        finally
        {
            clients.ForEach(client => client.Dispose());
        }
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Accept_SetUpOfOneSocketThrows_ClosesItReleasesItsSlotAndKeepsAccepting(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => options.MaxConnections = 1, cancellationToken);
        int setUps = 0;
        server.BeforeConnectionSetup = _ =>
        {
            if (Interlocked.Increment(ref setUps) == 1)
            {
                throw new SocketException((int)SocketError.ConnectionReset);
            }
        };

        using Socket failed = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        int read;
        try
        {
            read = await failed.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken);
        }
        catch (SocketException ex) when (ex.SocketErrorCode == SocketError.ConnectionReset)
        {
            read = 0;
        }

        Assert.That(read, Is.Zero, "the failed connection is closed");
        await AssertStillServesAsync(server, cancellationToken);
        Assert.That(server.Counters.Drops, Is.EqualTo(1));
        Assert.That(setUps, Is.EqualTo(2));
    }

    private static TcpEchoServerOptions LoopbackOptions() => new() { Address = IPAddress.Loopback, Port = 0 };

    private static async Task<TcpEchoServer> StartAsync(Action<TcpEchoServerOptions>? configure = null, CancellationToken cancellationToken = default)
    {
        TcpEchoServerOptions options = LoopbackOptions();
        configure?.Invoke(options);
        var server = new TcpEchoServer(options);
        await server.StartAsync(cancellationToken);
        return server;
    }

    /// <summary>Waits until no connection is open and every args but the accept loop's is back in the pool.</summary>
    private static Task WaitForIdleAsync(TcpEchoServer server, CancellationToken cancellationToken)
        => Poll.UntilAsync(
            () => server.Counters is { CurrentConnections: 0 } counters && counters.PoolAvailableCount == counters.PoolTotalCount - 1,
            cancellationToken);

    /// <summary>A new client gets its echo, and afterwards the pool is back to its baseline.</summary>
    private static async Task AssertStillServesAsync(TcpEchoServer server, CancellationToken cancellationToken)
    {
        await SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint!, 1000, cancellationToken);
        await WaitForIdleAsync(server, cancellationToken);
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
        await Poll.UntilAsync(() => server.Counters.MessagesEchoed > 0, cancellationToken);
        return writer;
    }

    /// <summary>After a stop that had to close a writing client at the end of the grace period: no connection is left,
    /// every args is back in the pool, the close counts as a drop, and the client's write and its reads come to an end
    /// (the write fails if the server reset the connection, or completes into the server's discarding).</summary>
    private static async Task AssertCutOffWithEveryArgsBackAsync(TcpEchoServer server, Socket client, Task writer, CancellationToken cancellationToken)
    {
        EchoServerCounters counters = server.Counters;
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
