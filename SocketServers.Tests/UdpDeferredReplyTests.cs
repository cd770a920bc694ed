using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using PoolLib.Tests;
using SocketServers.Internal;

namespace SocketServers.Tests;

// A UDP handler that defers its reply past its call, in both processings, with one receive: the receive goes on.
[TestFixture(UdpProcessing.ReceiveThreads)]
[TestFixture(UdpProcessing.ReplyBlock)]
public sealed class UdpDeferredReplyTests(UdpProcessing processing)
{
    [Test]
    [CancelAfter(10_000)]
    public async Task DeferReply_HandlerAwaitsWork_LaterDatagramsAnsweredMeanwhileThenTheReplyGoes(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        var work = new TaskCompletionSource<byte>(TaskCreationOptions.RunContinuationsAsynchronously);
        handler.Work = work.Task;

        await client.SendToAsync("wait"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => handler.DeferredCount == 1, cancellationToken);
        await client.SendToAsync("now"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        byte[] first = await client.ReceiveDatagramAsync(cancellationToken);
        work.SetResult((byte)'!');
        byte[] second = await client.ReceiveDatagramAsync(cancellationToken);

        Assert.That(first, Is.EqualTo("won"u8.ToArray()), "answered while the other waits");
        Assert.That(second, Is.EqualTo("tiaw!"u8.ToArray()), "the deferred reply, written after the work");
        await Poll.UntilAsync(() => server.Counters.MessagesHandled == 2, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Send_SecondTime_ThrowsAndSendsNothingMore(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);
        reply.Buffer.Span[0] = (byte)'x';
        reply.Send(1);

        Assert.Throws<InvalidOperationException>(() => reply.Send(1));
        Assert.Throws<InvalidOperationException>(() => _ = reply.Buffer);
        Assert.DoesNotThrow(reply.Dispose, "disposing an ended reply does nothing");
        await client.SendToAsync("now"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("x"u8.ToArray()));
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("won"u8.ToArray()), "the next reply is the next datagram's");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Send_ZeroLength_SendsAnEmptyDatagram(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);
        reply.Send(0);
        await client.SendToAsync("now"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);

        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.Empty, "the deferred reply, sent first");
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("won"u8.ToArray()));
        Assert.That(server.Counters.Drops, Is.Zero);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Send_LengthOutOfRange_ThrowsAndTheReplyStaysPending(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);
        var negative = Assert.Throws<ArgumentOutOfRangeException>(() => reply.Send(-1));
        var tooLong = Assert.Throws<ArgumentOutOfRangeException>(() => reply.Send(reply.Buffer.Length + 1));
        reply.Send(reply.Data.Length);

        Assert.That(negative!.ParamName, Is.EqualTo("length"));
        Assert.That(tooLong!.ParamName, Is.EqualTo("length"));
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("hold"u8.ToArray()));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Dispose_BeforeSend_NothingSentAndTheBufferGoesBack(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);
        reply.Dispose();
        await client.SendToAsync("now"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);

        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("won"u8.ToArray()), "no reply to the disposed one");
        await Poll.UntilAsync(() => ArgsOut(server) == 1, cancellationToken); // the one waiting for the next datagram
        Assert.Throws<InvalidOperationException>(() => reply.Send(0));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task OnDatagram_ThrowsAfterDeferring_FaultReportedAndTheReplyStillTheHandles(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        var logger = new FakeLogger();
        using var errors = new MetricCollector<long>(null, SocketServerMetrics.MeterName, "socketservers.errors");
        await using var server = await StartAsync(handler, cancellationToken, logger: logger);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold and throw"u8.ToArray(), cancellationToken);
        await Poll.UntilAsync(() => errors.GetMeasurementSnapshot().Count == 1, cancellationToken);
        reply.Send(4);

        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("hold"u8.ToArray()), "the buffer stayed the handle's");
        Assert.That(server.Counters.Drops, Is.Zero);
        Assert.That(errors.GetMeasurementSnapshot().Select(error => error.Tags["socketservers.operation"]), Is.EqualTo(new[] { "handler" }));

        // The handler's own failure, a warning as when it throws without deferring; an error would say the server failed.
        FakeLogRecord[] thrown = [.. logger.Collector.GetSnapshot().Where(record => record.Exception is not null)];
        Assert.That(thrown.Select(record => (record.Level, record.Exception!.GetType())), Is.EqualTo(new[] { (LogLevel.Warning, typeof(InvalidOperationException)) }));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Send_DuringTheHandlersCall_ReplyGoesAndTheArgsComesBackOnce(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();

        await client.SendToAsync("send at once"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("send at once"u8.ToArray()));
        await client.SendToAsync("now"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("won"u8.ToArray()));

        // A reply is counted after it is sent, and its args returned after that: wait for the count, then for every args
        // but the one waiting for the next datagram.
        await Poll.UntilAsync(() => server.Counters.MessagesHandled == 2 && ArgsOut(server) == 1, cancellationToken);
        Assert.That(server.Counters.Drops, Is.Zero);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StopAsync_ReplyDeferred_WaitsForItAndTheClientGetsIt(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);

        Task stopping = server.StopAsync();

        // Only the deferred reply holds an args once the receives have ended. A receive thread ends at once; the reply
        // block's receive, pending with an args, ends at the next datagram once the stop has begun (on another thread:
        // until it has, a late datagram is answered, to a client of its own).
        using Socket late = SocketTestExtensions.BoundUdpClient();
        await Poll.UntilAsync(
            () =>
            {
                if (processing == UdpProcessing.ReplyBlock)
                {
                    late.SendTo("late"u8, SocketFlags.None, server.LocalEndPoint!);
                }

                return ArgsOut(server) == 1;
            },
            cancellationToken);
        bool stoppedBeforeTheReply = stopping.IsCompleted;
        reply.Send(reply.Data.Length);
        await stopping.WaitAsync(cancellationToken);

        Assert.That(stoppedBeforeTheReply, Is.False, "the receives have ended, the deferred reply has not");
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("hold"u8.ToArray()));
        Assert.That(server.StopCutShort, Is.False);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StopAsync_DeferredReplyNeverEnds_CutShortAtTheGracePeriodAndALateSendIsDropped(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken, stopGracePeriod: TimeSpan.FromMilliseconds(200));
        using Socket client = SocketTestExtensions.BoundUdpClient();
        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);

        await server.StopAsync().WaitAsync(cancellationToken);
        reply.Send(reply.Data.Length);

        Assert.That(server.StopCutShort, Is.True);
        Assert.That(server.Counters.Drops, Is.EqualTo(1), "the late reply found the socket closed");
        Assert.That(server.Counters.PoolAvailableCount, Is.EqualTo(server.Counters.PoolTotalCount), "its args is back");
    }

    // Still waiting when the server stopped: a drop, as the counters' docs say, even if the handle then sends nothing.
    [Test]
    [CancelAfter(10_000)]
    public async Task StopAsync_DeferredReplyDisposedAfterTheGracePeriod_CountedAsDroppedWhileStopping(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        await using var server = await StartAsync(handler, cancellationToken, stopGracePeriod: TimeSpan.FromMilliseconds(200));
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        UdpDeferredReply reply = await DeferAsync(client, server, handler, "hold"u8.ToArray(), cancellationToken);

        await server.StopAsync().WaitAsync(cancellationToken);
        reply.Dispose();

        Assert.That((server.Counters.MessagesHandled, server.Counters.Drops), Is.EqualTo((0L, 1L)));
        Assert.That(meter.Recorded("socketservers.dropped_datagrams").Select(drop => drop.Tags["reason"]), Is.EqualTo(new[] { "stopping" }));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task DeferReply_EveryArgsOut_ReceivingWaitsUntilAReplyEnds(CancellationToken cancellationToken)
    {
        var handler = new DeferringHandler();
        using var waiting = new MetricCollector<long>(null, "PoolLib", "pool.takers.waiting");
        await using var server = await StartAsync(handler, cancellationToken, maxPendingDatagrams: 1);
        using Socket client = SocketTestExtensions.BoundUdpClient();
        string pool = $"udp-args@{server.LocalEndPoint}";

        // One args for the receive and one for a pending datagram: two deferred replies hold both.
        UdpDeferredReply first = await DeferAsync(client, server, handler, "hold 1"u8.ToArray(), cancellationToken);
        UdpDeferredReply second = await DeferAsync(client, server, handler, "hold 2"u8.ToArray(), cancellationToken);
        await Poll.UntilAsync(() => LastWaiting(waiting, pool) == 1, cancellationToken);
        await client.SendToAsync("now"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        first.Send(first.Data.Length);

        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("hold 1"u8.ToArray()));
        Assert.That(await client.ReceiveDatagramAsync(cancellationToken), Is.EqualTo("won"u8.ToArray()), "received once an args came back");
        Assert.That(server.Counters.PoolTotalCount, Is.EqualTo(2));
        second.Dispose();
    }

    [Test]
    [CancelAfter(60_000)]
    public async Task DeferReply_SteadyStream_AllocatesNoObjectPerDatagram(CancellationToken cancellationToken)
    {
        // As UdpEchoServerTests' steady-stream test: a blocking client on this thread that allocates nothing per
        // datagram and counts what it does; the process-wide rest is the server's, plus the runtime's own noise. Each
        // datagram's reply is deferred and ended (in the handler's call, so that no Task of the test's own counts).
        const int Warmup = 5_000;
        const int Measured = 50_000;
        const double MaxBytesPerDatagram = 8;
        await using var server = await StartAsync(new DeferringHandler(), cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp) { ReceiveTimeout = 10_000 };
        client.Connect(server.LocalEndPoint!);
        byte[] datagram = [.. "send at once"u8, .. new byte[20]];
        byte[] reply = new byte[64];
        int wrongReplies = 0;

        void Exchange(int count)
        {
            for (int i = 0; i < count; i++)
            {
                cancellationToken.ThrowIfCancellationRequested();
                client.Send(datagram);
                wrongReplies += client.Receive(reply) == datagram.Length ? 0 : 1;
            }
        }

        Exchange(Warmup);
        long clientBefore = GC.GetAllocatedBytesForCurrentThread();
        long before = GC.GetTotalAllocatedBytes(precise: true);
        Exchange(Measured);
        long after = GC.GetTotalAllocatedBytes(precise: true);
        double serverBytesPerDatagram = (double)(after - before - (GC.GetAllocatedBytesForCurrentThread() - clientBefore)) / Measured;

        Assert.That(wrongReplies, Is.Zero);
        Assert.That(serverBytesPerDatagram, Is.LessThan(MaxBytesPerDatagram), $"the server allocated {serverBytesPerDatagram:F2} B per deferred reply");
    }

    private static long LastWaiting(MetricCollector<long> waiting, string pool)
    {
        waiting.RecordObservableInstruments();
        return waiting.GetMeasurementSnapshot().LastOrDefault(measurement => Equals(measurement.Tags["pool.name"], pool))?.Value ?? -1;
    }

    private async Task<UdpServer> StartAsync(UdpDatagramHandler handler, CancellationToken cancellationToken, TimeSpan? stopGracePeriod = null, int maxPendingDatagrams = 256, ILogger? logger = null)
    {
        var options = new UdpServerOptions
        {
            Address = IPAddress.Loopback,
            Port = 0,
            Processing = processing,
            ConcurrentReceives = 1,
            MaxPendingDatagrams = maxPendingDatagrams,
        };
        if (stopGracePeriod is { } period)
        {
            options.StopGracePeriod = period;
        }

        return await Started.StartAsync(new UdpServer(options, handler, logger), cancellationToken);
    }

    /// <summary>Sends a datagram the handler defers and keeps, and returns its reply once deferred.</summary>
    private static async Task<UdpDeferredReply> DeferAsync(Socket client, UdpServer server, DeferringHandler handler, byte[] datagram, CancellationToken cancellationToken)
    {
        int before = handler.DeferredCount;
        await client.SendToAsync(datagram, SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => handler.DeferredCount == before + 1, cancellationToken);
        Assert.That(handler.Kept.TryDequeue(out UdpDeferredReply reply), Is.True);
        return reply;
    }

    private static int ArgsOut(UdpServer server) => server.Counters.PoolTotalCount - server.Counters.PoolAvailableCount;

    /// <summary>
    /// Answers a datagram with its bytes reversed, at once; defers one that starts with "w": reversed and followed by what
    /// <see cref="Work"/> yields, once it has; keeps one that starts with "hold" for the test (throwing after it if the
    /// datagram says "throw"); sends one that says "send at once" back during its call.
    /// </summary>
    private sealed class DeferringHandler : UdpDatagramHandler
    {
        private int _deferred;

        public Task<byte> Work { get; set; } = Task.FromResult((byte)0);

        public ConcurrentQueue<UdpDeferredReply> Kept { get; } = new();

        public int DeferredCount => Volatile.Read(ref _deferred);

        public override int OnDatagram(UdpDatagram datagram)
        {
            if (datagram.Data.StartsWith("hold"u8))
            {
                Kept.Enqueue(datagram.DeferReply());
                Interlocked.Increment(ref _deferred);
                return datagram.Data.EndsWith("throw"u8) ? throw new InvalidOperationException("the datagram says so") : NoReply;
            }

            if (datagram.Data.StartsWith("send at once"u8))
            {
                // Ended before the call returns: the receive loop still holds the args until it does.
                datagram.DeferReply().Send(datagram.Length);
                Interlocked.Increment(ref _deferred);
                return NoReply;
            }

            if (datagram.Data.StartsWith("w"u8))
            {
                _ = ReplyAfterWorkAsync(datagram.DeferReply());
                Interlocked.Increment(ref _deferred);
                return NoReply;
            }

            datagram.Buffer[..datagram.Length].Reverse();
            return datagram.Length;
        }

        private async Task ReplyAfterWorkAsync(UdpDeferredReply reply)
        {
            using (reply)
            {
                byte suffix = await Work;
                int length = reply.Data.Length;
                reply.Buffer.Span[..length].Reverse();
                reply.Buffer.Span[length] = suffix;
                reply.Send(length + 1);
            }
        }
    }
}
