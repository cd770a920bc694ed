using System.Text;

namespace SocketServers.Tests;

// WriteOwnedAsync: replies from memory the handler owns, sent without a copy after what is buffered.
public sealed partial class TcpServerTests
{
    [TestCase(10)]
    [TestCase(200_000)]
    [CancelAfter(10_000)]
    public async Task WriteOwnedAsync_HeaderThenOwnedBody_ArrivesIntact(int length, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(new StoredValueHandler(), cancellationToken: cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync($"get {length}\nget 3\n", cancellationToken);

        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo($"${length}"));
        Assert.That(await client.ReadExactlyAsync(length + 1, cancellationToken), Is.EqualTo(StoredValueHandler.Value(length).Append((byte)'\n')));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("$3"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("abc"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task WriteOwnedAsync_AfterTheConnectionClosed_ThrowsObjectDisposed(CancellationToken cancellationToken)
    {
        var handler = new StoredValueHandler();
        await using var server = await StartAsync(handler, cancellationToken: cancellationToken);
        using (LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await client.SendAsync("get 3\n", cancellationToken);
            await client.ReadLineAsync(cancellationToken);
        }

        TcpConnection closed = await handler.Closed.Task.WaitAsync(cancellationToken);

        Assert.Throws<ObjectDisposedException>(() => closed.WriteOwnedAsync(new byte[1]));
    }

    // Each reply is a header and the stored value, never copied; the gathered sends allocate nothing either.
    [Test]
    [Category(TcpAllocationMeter.Category)]
    [CancelAfter(60_000)]
    public async Task WriteOwnedAsync_SteadyStreamOfReplies_AllocatesNoObjectPerMessage(CancellationToken cancellationToken)
    {
        TcpAllocationMeter.AssumeOptimizedBuild();
        const double MaxBytesPerReply = 8;
        const int Requests = 4;
        byte[] batch = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("get 3000\n", Requests)));

        double bytesPerReply = await ServerBytesPerRequestAsync(new StoredValueHandler(), null, batch, (Requests, 2 * Requests), MaxBytesPerReply, cancellationToken);

        Assert.That(bytesPerReply, Is.LessThan(MaxBytesPerReply), $"the server allocated {bytesPerReply:F2} B per reply");
    }

    /// <summary>"get N" answers "$N", a line end, then N stored bytes with <see cref="TcpConnection.WriteOwnedAsync"/>
    /// and a line end.</summary>
    private sealed class StoredValueHandler : TcpConnectionHandler
    {
        private static readonly byte[] s_lineEnd = "\n"u8.ToArray();
        private static readonly Dictionary<int, byte[]> s_values = new() { [3] = Value(3), [10] = Value(10), [3000] = Value(3000), [200_000] = Value(200_000) };
        private static readonly Dictionary<int, byte[]> s_headers = s_values.Keys.ToDictionary(length => length, length => Encoding.ASCII.GetBytes($"${length}\n"));

        public TaskCompletionSource<TcpConnection> Closed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public static byte[] Value(int length) => ScriptedHandler.Pattern(length);

        public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            int consumed = 0;
            while (data.Span[consumed..].IndexOf((byte)'\n') is var end and >= 0)
            {
                int length = int.Parse(data.Span.Slice(consumed + 4, end - 4), provider: null);
                consumed += end + 1;
                await connection.WriteAsync(s_headers[length]);
                await connection.WriteOwnedAsync(s_values[length]);
                await connection.WriteAsync(s_lineEnd);
            }

            return consumed;
        }

        public override void OnClosed(TcpConnection connection) => Closed.TrySetResult(connection);
    }
}
