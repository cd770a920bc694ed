using System.Net;
using System.Net.Sockets;
using System.Text;
using Samples;

namespace SocketServers.Tests;

// The handlers SocketServers/README.md shows under "Your own protocol" are Samples/UppercaseHandler.cs and
// Samples/LookupDatagramHandler.cs, and the client under "Pooled TCP client" is Samples/RedisPing.cs, run here.
public sealed class ReadmeTests
{
    [Test]
    public void Readme_YourOwnProtocol_ShowsTheSampleHandlerAsCompiled()
    {
        string readme = Readme();
        string sample = Sample("UppercaseHandler.cs.txt");

        Assert.That(readme, Does.Contain("## Your own protocol"));
        Assert.That(readme, Does.Contain(CodeBlock(sample)));
        Assert.That(sample.TrimEnd('\n').Split('\n'), Has.Length.LessThanOrEqualTo(55), "lines");
    }

    [Test]
    public void Readme_DeferredUdpReply_ShowsTheSampleHandlerAsCompiled()
    {
        Assert.That(Readme(), Does.Contain(CodeBlock(Sample("LookupDatagramHandler.cs.txt"))));
    }

    [Test]
    public void Readme_PooledTcpClient_ShowsTheSampleClientAsCompiled()
    {
        string readme = Readme();

        Assert.That(readme, Does.Contain("## Pooled TCP client"));
        Assert.That(readme, Does.Contain(CodeBlock(Sample("RedisPing.cs.txt"))));
    }

    // The README's pool, its health check included, against a real redis-server.
    [Test]
    [CancelAfter(30_000)]
    public async Task RedisPing_PooledConnectionWithTheHealthCheck_AnswersPong(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        int checks = 0;
        using var pool = new TcpClientPool(new TcpClientPoolOptions
        {
            EndPoint = new DnsEndPoint("localhost", redis.EndPoint.Port),
            Pool = new PoolLib.PoolOptions { MaxCapacity = 16, CreateTimeout = TimeSpan.FromSeconds(5), ValidateAfterIdle = TimeSpan.FromTicks(1) },
            HealthCheck = async (connection, token) => Interlocked.Increment(ref checks) > 0 && await RedisPing.PingAsync(connection, token) == "+PONG",
        });

        for (int i = 0; i < 3; i++)
        {
            using PoolLib.PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken);
            Assert.That(await RedisPing.PingAsync(slot.Object, cancellationToken), Is.EqualTo("+PONG"));
        }

        Assert.That(checks, Is.EqualTo(3), "each take checked the connection, idle for longer than a tick");
        Assert.That(pool.TotalCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task LookupDatagramHandler_LookupAwaits_ReplyIsWhatItWrote(CancellationToken cancellationToken)
    {
        var lookedUp = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var handler = new LookupDatagramHandler(async (question, answer) =>
        {
            await lookedUp.Task;
            return Encoding.ASCII.GetBytes($"{question.Length} bytes asked", answer.Span);
        });
        var options = new UdpServerOptions { Address = IPAddress.Loopback, Port = 0, ConcurrentReceives = 1 };
        await using var server = await Started.StartAsync(new UdpServer(options, handler), cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));

        await client.SendToAsync("who?"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        lookedUp.SetResult();
        byte[] reply = new byte[64];
        int received = await client.ReceiveAsync(reply, SocketFlags.None, cancellationToken);

        Assert.That(Encoding.ASCII.GetString(reply, 0, received), Is.EqualTo("4 bytes asked"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task UppercaseHandler_LinesThenQuit_NumberedUpperCaseRepliesThenEnd(CancellationToken cancellationToken)
    {
        await using TcpServer server = await Started.StartAsync(new TcpServer(new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 }, new UppercaseHandler()), cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("hello\nwor", cancellationToken);
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("1: HELLO"));
        await client.SendAsync("ld\nquit\nignored\n", cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("2: WORLD\n"));
    }

    // The frame reader's loop over a line split across receives, CRLF and LF lines coalesced, then one too long.
    [Test]
    [CancelAfter(10_000)]
    public async Task UppercaseHandler_LineOverTheMaximum_LinesBeforeAnsweredThenErrorAndEnd(CancellationToken cancellationToken)
    {
        await using TcpServer server = await Started.StartAsync(new TcpServer(new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 }, new UppercaseHandler()), cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("sp", cancellationToken);
        await client.SendAsync("lit\r\nlf\ncrlf\r\n" + new string('x', 4097) + "\n", cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("1: SPLIT\n2: LF\n3: CRLF\nline too long\n"));
    }

    private static string Readme() => File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "SocketServers.README.md"));

    private static string Sample(string file) => File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "Samples", file));

    private static string CodeBlock(string code) => "```csharp\n" + code + "```";
}
