using System.Net;
using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.Time.Testing;
using SocketServers.Resp;

namespace SocketServers.Tests;

// The RESP sample beside a real redis-server (Debian's, which .ci/run installs): the same bytes sent to both get the
// same bytes back. Where redis-server is missing a test is inconclusive, and under CI it fails.
public sealed partial class RespConnectionHandlerTests
{
    private const string Ping = "*1\r\n$4\r\nPING\r\n";

    private static readonly string s_setOptions = string.Concat(
        "SET a b EX 10\r\nTTL a\r\nSET a b NX\r\nSET a c XX\r\nSET z c XX\r\nSET a b EX 0\r\nSET a b EX -1\r\n",
        "SET a b EX x\r\nSET a b NX XX\r\nSET a b EX 1 PX 1\r\nSET a b EX 9223372036854775807\r\nSET a b PX 9223372036854775807\r\n",
        "SET a b EX 9223372036854775\r\nSET a b KEEPTTL\r\nTTL a\r\nset a b px 5000 nx\r\nSET a b ex 100 KEEPTTL\r\nSET a b FOO\r\n",
        "SET a b EX\r\nSET a b EXAT 1\r\nGET a\r\nTTL nokey\r\nSET a b PX 100000000000000\r\nSET n 5 EX 100\r\nINCR n\r\nTTL n\r\n",
        "SET q v xx nx\r\nSET q v PXAT 99999999999999 KEEPTTL\r\nTTL\r\nPTTL a b\r\nPTTL nokey\r\n");

    private static IEnumerable<TestCaseData> SameAsRedisStreams()
    {
        yield return new TestCaseData("*-1\r\n*0\r\n*-3\r\n", true).SetName("Redis_NullAndEmptyArrays_IgnoredAndTheConnectionServes");
        yield return new TestCaseData(s_setOptions, true).SetName("Redis_SetWithItsOptions_SameReplies");
        yield return new TestCaseData("*3000000000\r\n", true).SetName("Redis_ArrayLengthOverIntMaxValue_SameError");
        yield return new TestCaseData("*1\r\n$600000000\r\n", true).SetName("Redis_BulkLengthOverRedisLimit_SameError");
        // Lines with no end, longer than Redis reads, and no PING after them: its CRLF would end them.
        yield return new TestCaseData(new string('x', 70_000), false).SetName("Redis_InlineLineTooLong_SameError");
        yield return new TestCaseData("*" + new string('1', 70_000), false).SetName("Redis_ArrayHeaderLineTooLong_SameError");
        yield return new TestCaseData("*1\r\n$" + new string('1', 70_000), false).SetName("Redis_BulkHeaderLineTooLong_SameError");
    }

    [TestCaseSource(nameof(SameAsRedisStreams))]
    [CancelAfter(30_000)]
    public async Task Redis_Stream_SameRepliesAsRedisServer(string stream, bool ping, CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        await using var server = await StartAsync(cancellationToken);

        string expected = await ExchangeAsync(redis.EndPoint, stream + (ping ? Ping : ""), cancellationToken);
        string actual = await ExchangeAsync(server.LocalEndPoint!, stream + (ping ? Ping : ""), cancellationToken);

        Assert.That(actual, Is.EqualTo(expected));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Redis_OverMaxMemory_SameOutOfMemoryErrorAsRedisServer(CancellationToken cancellationToken)
    {
        const string Stream = "SET k v\r\nINCR n\r\nGET k\r\nDEL k\r\nEXISTS k\r\n";
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        Assert.That(await redis.CommandAsync(cancellationToken, "CONFIG", "SET", "maxmemory", "1"), Is.EqualTo("+OK"));
        using var store = new RespStore(TimeProvider.System, maxMemory: 1);
        await using var server = await Started.StartAsync(new TcpServer(Options(), new RespConnectionHandler(store, BufferSize)), cancellationToken);

        string expected = await ExchangeAsync(redis.EndPoint, Stream + Ping, cancellationToken);
        string actual = await ExchangeAsync(server.LocalEndPoint!, Stream + Ping, cancellationToken);

        Assert.That(actual, Is.EqualTo(expected));
        Assert.That(actual, Does.StartWith("-OOM command not allowed when used memory > 'maxmemory'.\r\n"));
    }

    // Commands longer than a connection's buffer, as redis takes them: a DEL and an EXISTS of 1,000 keys (about 22 KB
    // each) and a 9,000-byte value, with the server's default BufferSize (8 KiB) and MaxMessageSize (1 MiB).
    [Test]
    [CancelAfter(30_000)]
    public async Task Redis_CommandsLongerThanTheBuffer_SameRepliesAsRedisServer(CancellationToken cancellationToken)
    {
        string value = new('v', 9_000);
        string stream = string.Concat(Enumerable.Range(0, 500).Select(i => Command("SET", $"key:{2 * i:D12}", "v")))
            + Command(["DEL", .. Enumerable.Range(0, 1000).Select(i => $"key:{i:D12}")]) + Command(["EXISTS", .. Enumerable.Range(0, 1000).Select(i => $"key:{i:D12}")])
            + Command("SET", "large", value) + Command("GET", "large");
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        var options = new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 };
        await using var server = await Started.StartAsync(new TcpServer(options, new RespConnectionHandler(options.MaxMessageSize)), cancellationToken);

        string expected = await ExchangeAsync(redis.EndPoint, stream + Ping, cancellationToken);
        string actual = await ExchangeAsync(server.LocalEndPoint!, stream + Ping, cancellationToken);

        Assert.That(actual, Is.EqualTo(expected));
        Assert.That(actual, Does.EndWith($":500\r\n:0\r\n+OK\r\n$9000\r\n{value}\r\n+PONG\r\n"));
    }

    // Expiry on the server's clock: lazily when a key is touched, and by the sweep for a key nobody touches.
    [Test]
    [CancelAfter(10_000)]
    public async Task Set_KeysWithExpiry_GoneOnTheServersClock(CancellationToken cancellationToken)
    {
        var time = new FakeTimeProvider();
        using var store = new RespStore(time, maxMemory: 0);
        await using var server = await Started.StartAsync(new TcpServer(Options(), new RespConnectionHandler(store, BufferSize)), cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync("SET touched v PX 100\r\nSET untouched v EX 1\r\nGET touched\r\nPTTL touched\r\n", cancellationToken);
        string before = await ReadAsync(client, 23, cancellationToken);

        time.Advance(TimeSpan.FromMilliseconds(100));
        await client.SendAsync("GET touched\r\nTTL touched\r\n", cancellationToken);
        string after = await ReadAsync(client, 10, cancellationToken);
        int untouchedBeforeTheSweep = store.Count;
        time.Advance(TimeSpan.FromMilliseconds(900));

        Assert.That(before, Is.EqualTo("+OK\r\n+OK\r\n$1\r\nv\r\n:100\r\n"));
        Assert.That(after, Is.EqualTo("$-1\r\n:-2\r\n"));
        Assert.That((untouchedBeforeTheSweep, store.Count), Is.EqualTo((1, 0)));
    }

    private static Task<TcpServer> StartAsync(CancellationToken cancellationToken) => StartAsync(configure: null, cancellationToken);

    private static async Task<TcpServer> StartAsync(Action<TcpServerOptions>? configure, CancellationToken cancellationToken)
    {
        TcpServerOptions options = Options();
        configure?.Invoke(options);
        return await Started.StartAsync(new TcpServer(options, new RespConnectionHandler(BufferSize)), cancellationToken);
    }

    private static TcpServerOptions Options() => new() { Address = IPAddress.Loopback, Port = 0, BufferSize = BufferSize };

    /// <summary>Sends <paramref name="stream"/> on a connection of its own; returns what comes back up to a PING's reply,
    /// or to the end of the stream (or a reset), shown as <c>&lt;end&gt;</c>.</summary>
    private static async Task<string> ExchangeAsync(IPEndPoint endPoint, string stream, CancellationToken cancellationToken)
    {
        using LineClient client = await LineClient.ConnectAsync(endPoint, cancellationToken);
        await client.SendAsync(stream, cancellationToken);
        var received = new StringBuilder();
        byte[] buffer = new byte[4096];
        while (!received.ToString().EndsWith("+PONG\r\n", StringComparison.Ordinal))
        {
            int read;
            try
            {
                read = await client.Socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken);
            }
            catch (SocketException ex) when (ex.SocketErrorCode == SocketError.ConnectionReset)
            {
                read = 0;
            }

            if (read == 0)
            {
                return received.Append("<end>").ToString();
            }

            received.Append(Encoding.ASCII.GetString(buffer, 0, read));
        }

        return received.ToString();
    }
}
