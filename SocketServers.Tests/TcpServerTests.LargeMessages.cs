using System.Net.Sockets;
using System.Text;
using PoolLib.Tests;

namespace SocketServers.Tests;

// Messages longer than BufferSize: the receive grows within the budget, and a message too large ends as documented.
public sealed partial class TcpServerTests
{
    [Test]
    [CancelAfter(10_000)]
    public async Task Handler_LineTenTimesTheBuffer_EchoedWholeAndGrownBufferGivenBack(CancellationToken cancellationToken)
    {
        var handler = new LineEchoHandler();
        await using var server = await StartAsync(handler, options => options.BufferSize = 1024, cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        string line = Encoding.ASCII.GetString(ScriptedHandler.Pattern(10 * 1024));

        await client.SendAsync(line + "\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo(line));
        Assert.That(handler.Sizes, Is.EqualTo((1024, 1024 * 1024)));
        await Poll.UntilAsync(() => server.BuffersInUse == 0 && server.LargeBuffers.LentBytes == 0, cancellationToken);
        Assert.That(server.LargeBuffers.AllocatedBytes, Is.GreaterThanOrEqualTo(16 * 1024));
    }

    // Each line grows the receive through three sizes and gives the buffers back: reused, they cost nothing per line.
    [Test]
    [Category(TcpAllocationMeter.Category)]
    [CancelAfter(60_000)]
    public async Task Handler_SteadyStreamOfLinesTenTimesTheBuffer_AllocatesNoObjectPerMessage(CancellationToken cancellationToken)
    {
        TcpAllocationMeter.AssumeOptimizedBuild();
        const double MaxBytesPerLine = 8;
        byte[] line = [.. ScriptedHandler.Pattern(10 * 1024), (byte)'\n'];

        double bytesPerLine = await ServerBytesPerRequestAsync(new LineEchoHandler(), options => options.BufferSize = 1024, line, (1, 1), MaxBytesPerLine, cancellationToken);

        Assert.That(bytesPerLine, Is.LessThan(MaxBytesPerLine), $"the server allocated {bytesPerLine:F2} B per line");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task OnMessageTooLargeAsync_MessageLongerThanMaxMessageSize_ReplyThenEndOfStream(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new LineEchoHandler(), options => (options.BufferSize, options.MaxMessageSize) = (1024, 4096), cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(ScriptedHandler.Pattern(5000), cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("too large: 4096"));
        Assert.That(await ReadEndAsync(client, cancellationToken), Is.True);
        Assert.That(meter.Recorded("socketservers.oversized_messages").Select(message => message.Tags["reason"]), Is.EqualTo(new[] { "max_message_size" }));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task OnMessageTooLargeAsync_BudgetSpentByAnotherConnection_EndsAtOnceAndTheOtherGoesOn(CancellationToken cancellationToken)
    {
        // Budget: the larger of 2 × 64 KiB and 2 × 1 KiB, so one connection holding a 64 KiB buffer leaves no room for another.
        await using var server = await StartAsync(new LineEchoHandler(), options => (options.BufferSize, options.MaxMessageSize, options.MaxConnections) = (1024, 64 * 1024, 2), cancellationToken);
        using var meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using LineClient holding = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        using LineClient needing = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        string line = Encoding.ASCII.GetString(ScriptedHandler.Pattern(40_000));
        await holding.SendAsync(line, cancellationToken);
        await Poll.UntilAsync(() => server.LargeBuffers.LentBytes == 64 * 1024, cancellationToken);

        await needing.SendAsync(line, cancellationToken);

        // The holding connection gives nothing back until its line ends, which comes only after this.
        Assert.That(await needing.ReadLineAsync(cancellationToken), Does.StartWith("too large: "));
        Assert.That(await ReadEndAsync(needing, cancellationToken), Is.True);
        await holding.SendAsync("\n", cancellationToken);
        Assert.That(await holding.ReadLineAsync(cancellationToken), Is.EqualTo(line));
        Assert.That(meter.Recorded("socketservers.oversized_messages").Select(message => message.Tags["reason"]), Is.EqualTo(new[] { "memory_budget" }));
    }

    [Test]
    public void Constructor_MaxMessageSizeBelowBufferSize_ThrowsArgumentOutOfRange()
    {
        var options = new TcpServerOptions { BufferSize = 4096, MaxMessageSize = 1024 };

        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new TcpServer(options, new LineEchoHandler()));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
        Assert.That(exception.Message, Does.Contain(nameof(TcpServerOptions.MaxMessageSize)));
    }

    [TestCase(0)]
    [TestCase(TcpServerOptions.MaxMessageSizeLimit + 1)]
    public void MaxMessageSize_OutOfRange_ThrowsArgumentOutOfRange(int value)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new TcpServerOptions { MaxMessageSize = value });

        Assert.That(exception!.ParamName, Is.EqualTo(nameof(TcpServerOptions.MaxMessageSize)));
    }

    /// <summary>Reads to the server's end of stream, which may come as a reset (the linger's end, the client still
    /// sending); true when it came.</summary>
    private static async Task<bool> ReadEndAsync(LineClient client, CancellationToken cancellationToken)
    {
        try
        {
            await client.ReadToEndAsync(cancellationToken);
        }
        catch (SocketException ex) when (ex.SocketErrorCode == SocketError.ConnectionReset)
        {
        }

        return true;
    }

    /// <summary>Echoes each line once it is whole, from the received bytes; says so when a message is too large.</summary>
    private sealed class LineEchoHandler : TcpConnectionHandler
    {
        private static readonly byte[] s_lineEnd = "\n"u8.ToArray();

        /// <summary>The sizes the last connection reported.</summary>
        public (int BufferSize, int MaxMessageSize) Sizes { get; private set; }

        public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            Sizes = (connection.BufferSize, connection.MaxMessageSize);
            int consumed = 0;
            while (data.Span[consumed..].IndexOf((byte)'\n') is var end and >= 0)
            {
                // The line from the received bytes, longer than the send buffer, then a line end of its own.
                await connection.WriteAsync(data.Slice(consumed, end));
                await connection.WriteAsync(s_lineEnd);
                consumed += end + 1;
            }

            return consumed;
        }

        public override ValueTask OnMessageTooLargeAsync(TcpConnection connection, ReadOnlyMemory<byte> pending)
            => connection.WriteAsync(Encoding.ASCII.GetBytes($"too large: {pending.Length}\n"));
    }
}
