using System.Net;
using System.Net.Sockets;
using System.Text;
using PoolLib.Tests;
using SocketServers.Resp;

namespace SocketServers.Tests;

// The RESP2 sample over loopback, with a client of the tests' own: commands, pipelining, and bad input.
public sealed partial class RespConnectionHandlerTests
{
    private const int BufferSize = 1024;

    [TestCase("*1\r\n$4\r\nPING\r\n", "+PONG\r\n")]
    [TestCase("PING\r\n", "+PONG\r\n")]
    [TestCase("*2\r\n$4\r\nping\r\n$2\r\nhi\r\n", "$2\r\nhi\r\n")]
    [TestCase("*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n", "$5\r\nhello\r\n")]
    [TestCase("*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n", "$-1\r\n")]
    [TestCase("*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n")]
    [TestCase("*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n", "*0\r\n")]
    [TestCase("*1\r\n$3\r\nGET\r\n", "-ERR wrong number of arguments for 'get' command\r\n")]
    [TestCase("*3\r\n$4\r\nIncr\r\n$1\r\na\r\n$1\r\nb\r\n", "-ERR wrong number of arguments for 'incr' command\r\n")]
    [TestCase("CONFIG\r\n", "-ERR wrong number of arguments for 'config' command\r\n")]
    [TestCase("*2\r\n$5\r\nFLUSH\r\n$1\r\nx\r\n", "-ERR unknown command 'FLUSH'\r\n")]
    [TestCase("\r\n*1\r\n$4\r\nPING\r\n", "+PONG\r\n")]
    [TestCase("*-1\r\n*0\r\n*-3\r\n*1\r\n$4\r\nPING\r\n", "+PONG\r\n")]
    [TestCase("ECHO \"hello world\"\r\n", "$11\r\nhello world\r\n")]
    [TestCase("ECHO \"a\\x41\\n\\\\\"\r\n", "$4\r\naA\n\\\r\n")]
    [TestCase("ECHO 'it\\'s'\r\n", "$4\r\nit's\r\n")]
    [TestCase("ECHO 'a\\nb'\r\n", "$4\r\na\\nb\r\n")]
    [TestCase("ECHO x\"y z\"\r\n", "$4\r\nxy z\r\n")]
    [TestCase("ECHO \"\"\r\n", "$0\r\n\r\n")]
    [TestCase("SET \"q k\" 'v'\r\n*2\r\n$3\r\nGET\r\n$3\r\nq k\r\n", "+OK\r\n$1\r\nv\r\n")]
    [CancelAfter(10_000)]
    public async Task Command_Request_Reply(string request, string reply, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(request, cancellationToken);

        Assert.That(await ReadAsync(client, reply.Length, cancellationToken), Is.EqualTo(reply));
    }

    // Redis answers a command it does not know with an error and goes on; so must the sample.
    [Test]
    [CancelAfter(10_000)]
    public async Task UnknownCommand_ErrorThenTheConnectionServesTheNextRequest(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync(Command("HGETALL", "h"), cancellationToken);
        string error = await client.ReadLineAsync(cancellationToken) ?? "(closed)";

        await client.SendAsync(Command("PING"), cancellationToken);

        Assert.That(error, Is.EqualTo("-ERR unknown command 'HGETALL'\r"));
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("+PONG\r"));
        Assert.That(server.Counters.CurrentConnections, Is.EqualTo(1));
    }

    // An object per request (24 bytes at the very least) would be far above the bound. No request makes a key, which
    // allocates its entry: the store's growth, not the protocol's.
    [Test]
    [Category(TcpAllocationMeter.Category)]
    [CancelAfter(60_000)]
    public async Task Pipeline_SteadyStream_AllocatesNoObjectPerRequest(CancellationToken cancellationToken)
    {
        TcpAllocationMeter.AssumeOptimizedBuild();
        const double MaxBytesPerRequest = 8;
        await using var server = await StartAsync(cancellationToken);
        string[] requests = [Command("SET", "key", "value"), Command("GET", "key"), Command("INCR", "n"), Command("DEL", "missing"), Command("EXISTS", "key"), "PING\r\n", Command("ECHO", "hi")];
        const string Replies = "+OK\r\n$5\r\nvalue\r\n:1\r\n:0\r\n:1\r\n+PONG\r\n$2\r\nhi\r\n";
        using (LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken))
        {
            await client.SendAsync(string.Concat(requests), cancellationToken);
            Assert.That(await ReadAsync(client, Replies.Length, cancellationToken), Is.EqualTo(Replies));
        }

        double bytesPerRequest = await Task.Run(
            () => TcpAllocationMeter.ServerBytesPerRequest(server.LocalEndPoint!, Encoding.ASCII.GetBytes(string.Concat(requests)), requests.Length, Replies.Count(c => c == '\n'), MaxBytesPerRequest),
            cancellationToken);

        Assert.That(bytesPerRequest, Is.LessThan(MaxBytesPerRequest), $"the server allocated {bytesPerRequest:F2} B per request");
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task SetGetIncrDelExists_OneConnection_RepliesInOrder(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        string[] requests = [Command("SET", "k", "41"), Command("INCR", "k"), Command("GET", "k"), Command("EXISTS", "k", "other"),
            Command("DEL", "k", "other"), Command("EXISTS", "k"), Command("INCR", "n"), Command("SET", "s", "text"), Command("INCR", "s")];
        const string replies = "+OK\r\n:42\r\n$2\r\n42\r\n:1\r\n:1\r\n:0\r\n:1\r\n+OK\r\n-ERR value is not an integer or out of range\r\n";

        await client.SendAsync(string.Concat(requests), cancellationToken);

        Assert.That(await ReadAsync(client, replies.Length, cancellationToken), Is.EqualTo(replies));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Request_SentAByteAtATime_HandledWhole(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        foreach (char character in Command("SET", "key", "value") + Command("GET", "key"))
        {
            await client.SendAsync(character.ToString(), cancellationToken);
        }

        Assert.That(await ReadAsync(client, 16, cancellationToken), Is.EqualTo("+OK\r\n$5\r\nvalue\r\n"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Get_ValueSetByAnotherConnection_Seen(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient writer = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        using LineClient reader = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await writer.SendAsync(Command("SET", "shared", "yes"), cancellationToken);
        await ReadAsync(writer, 5, cancellationToken);
        await reader.SendAsync(Command("GET", "shared"), cancellationToken);

        Assert.That(await ReadAsync(reader, 9, cancellationToken), Is.EqualTo("$3\r\nyes\r\n"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Del_MoreKeysThanAtFirst_CountsEach(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(Command("SET", "k3", "v") + Command("SET", "k7", "v") + Command(["DEL", .. Enumerable.Range(0, 20).Select(i => $"k{i}")]), cancellationToken);

        Assert.That(await ReadAsync(client, 14, cancellationToken), Is.EqualTo("+OK\r\n+OK\r\n:2\r\n"));
    }

    [TestCase("k")]
    [TestCase("'k'")]
    [CancelAfter(10_000)]
    public async Task Exists_InlineWithMoreKeysThanTheSessionHasRoomFor_CountsEach(string key, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        int keys = 10 * RespSession.ArgumentsKept;

        await client.SendAsync(Command("SET", "k", "v") + "EXISTS" + string.Concat(Enumerable.Repeat(" " + key, keys)) + "\r\n" + Command("PING"), cancellationToken);

        Assert.That(await ReadAsync(client, 18, cancellationToken), Is.EqualTo($"+OK\r\n:{keys}\r\n+PONG\r\n"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Get_ValueLongerThanTheSessionsScratch_RepliesItWhole(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        string value = string.Concat(Enumerable.Range(0, 900).Select(i => (char)('a' + (i % 26))));
        string reply = $"${value.Length}\r\n{value}\r\n";

        await client.SendAsync(Command("SET", "long", value) + Command("GET", "long") + Command("GET", "long"), cancellationToken);

        Assert.That(await ReadAsync(client, 5 + (2 * reply.Length), cancellationToken), Is.EqualTo("+OK\r\n" + reply + reply));
    }

    [TestCase("007")]
    [TestCase("+5")]
    [TestCase("-0")]
    [TestCase(" 1")]
    [TestCase("1 ")]
    [TestCase("")]
    [TestCase("12a")]
    [TestCase("-")]
    [TestCase("99999999999999999999")]
    [TestCase("9223372036854775808")]
    [CancelAfter(10_000)]
    public async Task Incr_ValueRedisDoesNotReadAsAnInteger_ErrorAndUnchanged(string value, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        string replies = $"+OK\r\n-ERR value is not an integer or out of range\r\n${value.Length}\r\n{value}\r\n";

        await client.SendAsync(Command("SET", "n", value) + Command("INCR", "n") + Command("GET", "n"), cancellationToken);

        Assert.That(await ReadAsync(client, replies.Length, cancellationToken), Is.EqualTo(replies));
    }

    [TestCase("9223372036854775807", "-ERR increment or decrement would overflow\r\n")]
    [TestCase("-9223372036854775808", ":-9223372036854775807\r\n")]
    [TestCase("0", ":1\r\n")]
    [TestCase("-1", ":0\r\n")]
    [CancelAfter(10_000)]
    public async Task Incr_IntegerAtTheEdges_AsRedisDoes(string value, string reply, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(Command("SET", "n", value) + Command("INCR", "n"), cancellationToken);

        Assert.That(await ReadAsync(client, 5 + reply.Length, cancellationToken), Is.EqualTo("+OK\r\n" + reply));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Quit_RepliesOkThenCloses(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(Command("QUIT") + Command("PING"), cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("+OK\r\n"));
    }

    // A client the server has closed holds its slot only for the linger, then is reset, as Redis resets it at once. It
    // held the slot until the idle timeout: at the cap, two clients that quit and stayed silent kept a new client's
    // PING unanswered for 20 s.
    [TestCase("*1\r\n$4\r\nQUIT\r\n", "+OK\r\n", TestName = "Close_ClientsQuitAndStaySilentAtTheCap_NewClientServedAndTheyAreReset")]
    [TestCase("*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n", TestName = "Close_ClientsSendBadInputAndStaySilentAtTheCap_NewClientServedAndTheyAreReset")]
    [CancelAfter(20_000)]
    public async Task Close_ClientsStaySilentAtTheCap_NewClientServedAndTheyAreReset(string request, string reply, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => (options.MaxConnections, options.IdleTimeout) = (2, Timeout.InfiniteTimeSpan), cancellationToken);
        var closed = new List<LineClient>();
        try
        {
            for (int i = 0; i < 2; i++)
            {
                closed.Add(await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken));
                await closed[i].SendAsync(request, cancellationToken);
                Assert.That(await ReadAsync(closed[i], reply.Length, cancellationToken), Is.EqualTo(reply));
            }

            using LineClient next = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
            await next.SendAsync(Command("PING"), cancellationToken);

            Assert.That(
                await SocketTestExtensions.WithinAsync(token => ReadAsync(next, 7, token), "the new client's PING answered while the closed clients, silent, are connected", cancellationToken),
                Is.EqualTo("+PONG\r\n"));
            foreach (LineClient client in closed)
            {
                await AssertResetAsync(client.Socket, cancellationToken);
            }
        }
        finally
        {
            closed.ForEach(client => client.Dispose());
        }
    }

    // Two clients that quit and kept sending had 45.5 GB read and dropped in 50 s, and held their slots meanwhile.
    [Test]
    [CancelAfter(20_000)]
    public async Task Close_ClientsQuitAndKeepSendingAtTheCap_NewClientServedAndTheyAreReset(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(options => (options.MaxConnections, options.IdleTimeout) = (2, Timeout.InfiniteTimeSpan), cancellationToken);
        var closed = new List<LineClient>();
        try
        {
            var sending = new List<Task<SocketError>>();
            for (int i = 0; i < 2; i++)
            {
                closed.Add(await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken));
                await closed[i].SendAsync(Command("QUIT"), cancellationToken);
                Assert.That(await ReadAsync(closed[i], 5, cancellationToken), Is.EqualTo("+OK\r\n"));
                sending.Add(closed[i].Socket.SendUntilFailedAsync(cancellationToken));
            }

            using LineClient next = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
            await next.SendAsync(Command("PING"), cancellationToken);

            Assert.That(
                await SocketTestExtensions.WithinAsync(token => ReadAsync(next, 7, token), "the new client's PING answered while the closed clients keep sending", cancellationToken),
                Is.EqualTo("+PONG\r\n"));
            Assert.That(await Task.WhenAll(sending), Has.All.EqualTo(SocketError.ConnectionReset).Or.EqualTo(SocketError.Shutdown));
        }
        finally
        {
            closed.ForEach(client => client.Dispose());
        }
    }

    // Bad input: an error reply, then the close, since where the next request would start is unknown.
    [TestCase("*1\r\n$2000\r\n", "request larger than this server's limit of 1024 bytes", TestName = "BadInput_BulkLengthOverTheLimit_ErrorThenClose")]
    [TestCase("*200\r\n", "request larger than this server's limit of 1024 bytes", TestName = "BadInput_MoreElementsThanTheLimitHoldsAt6BytesEach_ErrorThenClose")]
    [TestCase("*1\r\n$-5\r\n", "invalid bulk length", TestName = "BadInput_NegativeBulkLength_ErrorThenClose")]
    [TestCase("*1\r\n$abc\r\n", "invalid bulk length", TestName = "BadInput_NonNumericBulkLength_ErrorThenClose")]
    [TestCase("*x\r\n", "invalid multibulk length", TestName = "BadInput_NonNumericArrayLength_ErrorThenClose")]
    [TestCase("*+1\r\n$4\r\nPING\r\n", "invalid multibulk length", TestName = "BadInput_ArrayLengthWithAPlus_ErrorThenClose")]
    [TestCase("*1\r\n$04\r\nPING\r\n", "invalid bulk length", TestName = "BadInput_BulkLengthWithALeadingZero_ErrorThenClose")]
    [TestCase("*1\r\n$-0\r\n\r\n", "invalid bulk length", TestName = "BadInput_BulkLengthMinusZero_ErrorThenClose")]
    [TestCase("*1\r\n+PING\r\n", "expected '$'", TestName = "BadInput_ArrayOfSimpleStrings_ErrorThenClose")]
    [TestCase("*1\r\n$4\r\nPINGxx", "bulk string not ended by CRLF", TestName = "BadInput_BulkWithoutCrlf_ErrorThenClose")]
    [TestCase("*1\r\n$4xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "too big bulk count string", TestName = "BadInput_UnterminatedBulkHeaderLine_ErrorThenClose")]
    [TestCase("*1xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "too big mbulk count string", TestName = "BadInput_UnterminatedArrayHeaderLine_ErrorThenClose")]
    [TestCase("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000\r\n", "request larger than this server's limit of 1024 bytes", TestName = "BadInput_RequestLargerThanTheBuffer_ErrorThenClose")]
    [TestCase("ECHO \"abc\r\n", "unbalanced quotes in request", TestName = "BadInput_InlineQuoteLeftOpen_ErrorThenClose")]
    [TestCase("ECHO \"a\"b\r\n", "unbalanced quotes in request", TestName = "BadInput_InlineClosingQuoteNotFollowedBySpace_ErrorThenClose")]
    [CancelAfter(10_000)]
    public async Task BadInput_ErrorThenClose(string request, string error, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(Command("PING") + request, cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo($"+PONG\r\n-ERR Protocol error: {error}\r\n"));
        await AssertStillServesAsync(server, cancellationToken);
    }

    // The buffer fills with the request's start: it ends right after an argument, or within the next one's header.
    [TestCase(0, TestName = "BadInput_BufferFilledUpToAnArgumentsEnd_ErrorThenClose")]
    [TestCase(2, TestName = "BadInput_BufferFilledWithinAHeader_ErrorThenClose")]
    [CancelAfter(10_000)]
    public async Task BadInput_BufferFilledWithARequestsStart_ErrorThenClose(int headerBytesInTheBuffer, CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        const string Start = "*3\r\n$3\r\nSET\r\n$1000\r\n";
        string key = new('k', BufferSize - Start.Length - 2 - headerBytesInTheBuffer);
        string request = Start.Replace("1000", key.Length.ToString(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal) + key + "\r\n";
        Assert.That(request.Length + headerBytesInTheBuffer, Is.EqualTo(BufferSize), "the request's start fills the buffer");

        await client.SendAsync(Command("PING") + request + "$5\r\nhello\r\n", cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("+PONG\r\n-ERR Protocol error: request larger than this server's limit of 1024 bytes\r\n"));
        await AssertStillServesAsync(server, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task BadInput_InlineLineLongerThanTheBuffer_ErrorThenClose(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync(new string('x', BufferSize), cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("-ERR Protocol error: too big inline request\r\n"));
        await AssertStillServesAsync(server, cancellationToken);
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task BadInput_HalfSentRequestAtStop_ErrorThenStreamEnds(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync(Command("PING") + "*2\r\n$3\r\nGET\r\n$3\r\nke", cancellationToken);
        Assert.That(await ReadAsync(client, 7, cancellationToken), Is.EqualTo("+PONG\r\n"));
        await Poll.UntilAsync(() => server.BuffersInUse == 1, cancellationToken);

        Task stop = server.StopAsync(cancellationToken);
        string rest = await client.ReadToEndAsync(cancellationToken);
        client.Socket.Shutdown(SocketShutdown.Send);
        await stop;

        Assert.That(rest, Is.EqualTo("-ERR Protocol error: unfinished request at end of input\r\n"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task BadInput_HalfSentRequestThenClientCloses_ErrorBeforeTheEnd(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("*1\r\n$4\r\nPI", cancellationToken);
        client.Socket.Shutdown(SocketShutdown.Send);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("-ERR Protocol error: unfinished request at end of input\r\n"));
    }

    private static string Command(params string[] arguments)
        => $"*{arguments.Length}\r\n" + string.Concat(arguments.Select(argument => $"${argument.Length}\r\n{argument}\r\n"));

    private static async Task<string> ReadAsync(LineClient client, int length, CancellationToken cancellationToken)
        => Encoding.ASCII.GetString(await client.ReadExactlyAsync(length, cancellationToken));

    private static async Task AssertStillServesAsync(TcpServer server, CancellationToken cancellationToken)
    {
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);
        await client.SendAsync(Command("PING"), cancellationToken);
        Assert.That(await ReadAsync(client, 7, cancellationToken), Is.EqualTo("+PONG\r\n"));
    }

    /// <summary>Asserts that the server reset the connection: after its end of stream, a send fails.</summary>
    private static async Task AssertResetAsync(Socket client, CancellationToken cancellationToken)
    {
        Assert.That(await client.ReadEndAsync(cancellationToken), Is.Zero);
        Assert.That(await client.SendUntilFailedAsync(cancellationToken), Is.EqualTo(SocketError.ConnectionReset).Or.EqualTo(SocketError.Shutdown));
    }
}
