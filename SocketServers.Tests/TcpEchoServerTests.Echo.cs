using System.Net;
using System.Net.Sockets;
using PoolLib.Tests;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// Echoes: byte-exact under load and in bursts, through resets and half-closes, holding no buffer when idle.
public sealed partial class TcpEchoServerTests
{
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
        SocketServerCounters counters = server.Counters;
        Assert.That(counters.BytesSent, Is.EqualTo(bytesSent));
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
            // Send, never reading the echoes, until the kernel takes no more: the server's receive window is then
            // shut, so it holds bytes it has not read (and echoes it cannot send) when the reset comes.
            byte[] chunk = new byte[64 * KiB];
            Random.Shared.NextBytes(chunk);
            client.Blocking = false;
            SocketError error;
            do
            {
                cancellationToken.ThrowIfCancellationRequested();
                client.Send(chunk, 0, chunk.Length, SocketFlags.None, out error);
            }
            while (error == SocketError.Success);

            Assert.That(error, Is.EqualTo(SocketError.WouldBlock));

            // The kernel takes those bytes before the server accepts; a reset before it has would end nothing the
            // server counts yet.
            await Poll.UntilAsync(() => server.Counters.CurrentConnections == 1, cancellationToken);
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
        Assert.That(server.Counters.BytesSent, Is.EqualTo(data.Length));
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
}
