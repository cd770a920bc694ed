using System.Net;
using System.Net.Sockets;
using System.Text;
using PoolLib.Tests;

namespace SocketServers.Tests;

/// <summary>What runs before a connection starts: the PROXY header here, the TLS handshake in the other part.</summary>
[TestFixture]
public sealed partial class ConnectionPreambleTests
{
    private static readonly IPNetwork s_loopback = IPNetwork.Parse("127.0.0.0/8");

    [Test]
    [CancelAfter(30_000)]
    public async Task ProxyV1_FromTrustedSource_HeadersAddressIsTheClients(CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(options => options.ProxyProtocolNetworks.Add(s_loopback), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAllAsync(Encoding.ASCII.GetBytes("PROXY TCP4 203.0.113.7 127.0.0.1 5555 7\r\nhello\n"), cancellationToken);

        Assert.That(await ReadLineAsync(client, cancellationToken), Is.EqualTo("203.0.113.7:5555"));
        Assert.That(await ReadLineAsync(client, cancellationToken), Is.EqualTo("hello"));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task ProxyV1_PerAddressLimit_KeyedOnTheHeadersAddress(CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(
            options =>
            {
                options.ProxyProtocolNetworks.Add(s_loopback);
                options.MaxConnectionsPerAddress = 1;
            },
            cancellationToken);

        await AssertPerAddressLimitAsync(
            server,
            address => Encoding.ASCII.GetBytes($"PROXY TCP4 {address} 127.0.0.1 4000 7\r\n"),
            cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task ProxyV2_PerAddressLimit_KeyedOnTheHeadersAddress(CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(
            options =>
            {
                options.ProxyProtocolNetworks.Add(s_loopback);
                options.MaxConnectionsPerAddress = 1;
            },
            cancellationToken);

        await AssertPerAddressLimitAsync(
            server,
            address => ProxyHeaderParserTests.V2(0x21, 0x11, [.. IPAddress.Parse(address).GetAddressBytes(), 127, 0, 0, 1, 0x0F, 0xA0, 0, 7]),
            cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task ProxyV2_Local_KeepsTheSocketsAddress(CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(options => options.ProxyProtocolNetworks.Add(s_loopback), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAllAsync((byte[])[.. ProxyHeaderParserTests.V2(0x20, 0x00, []), .. "hi\n"u8], cancellationToken);

        Assert.That(await ReadLineAsync(client, cancellationToken), Is.EqualTo(client.LocalEndPoint!.ToString()));
        Assert.That(await ReadLineAsync(client, cancellationToken), Is.EqualTo("hi"));
    }

    [TestCase("hello\n", TestName = "Proxy_TrustedSourceWithoutHeader_Closed")]
    [TestCase("PROXY TCP4 203.0.113.7 127.0.0.1 5555\r\nhello\n", TestName = "Proxy_TrustedSourceWithMalformedV1_Closed")]
    [TestCase("\r\n\r\n\0\r\nQUIT\n\u0031\u0011\0\u000Chello\n", TestName = "Proxy_TrustedSourceWithMalformedV2_Closed")]
    [CancelAfter(30_000)]
    public async Task Proxy_TrustedSourceWithoutWellFormedHeader_Closed(string sent, CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(options => options.ProxyProtocolNetworks.Add(s_loopback), cancellationToken);
        using MeterReader meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAllAsync(Encoding.Latin1.GetBytes(sent), cancellationToken);

        Assert.That(await client.ReadEndAsync(cancellationToken), Is.Zero);
        Assert.That(server.Counters.TotalConnections, Is.Zero);
        await Poll.UntilAsync(() => Failures(meter, "proxy", "malformed") == 1, cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Proxy_TrustedSourceSilent_ClosedAtTheHandshakeTimeout(CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(
            options =>
            {
                options.ProxyProtocolNetworks.Add(s_loopback);
                options.HandshakeTimeout = TimeSpan.FromMilliseconds(200);
            },
            cancellationToken);
        using MeterReader meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        Assert.That(await client.ReadEndAsync(cancellationToken), Is.Zero);
        await Poll.UntilAsync(() => Failures(meter, "proxy", "timeout") == 1, cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Proxy_UntrustedSource_BytesAreData(CancellationToken cancellationToken)
    {
        await using TcpServer server = await StartAsync(options => options.ProxyProtocolNetworks.Add(IPNetwork.Parse("10.0.0.0/8")), cancellationToken);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAllAsync(Encoding.ASCII.GetBytes("PROXY TCP4 203.0.113.7 127.0.0.1 5555 7\r\n"), cancellationToken);

        Assert.That(await ReadLineAsync(client, cancellationToken), Is.EqualTo(client.LocalEndPoint!.ToString()));
        Assert.That(await ReadLineAsync(client, cancellationToken), Is.EqualTo("PROXY TCP4 203.0.113.7 127.0.0.1 5555 7\r"));
    }

    // The preambles' count races the accept loop's end: every slot must come back, and the stop must not wait on a
    // preamble it missed or end before one it counted.
    [Test]
    [CancelAfter(60_000)]
    public async Task Stop_WhileClientsConnectMidHeader_EveryPreambleEndsAndEverySlotComesBack(CancellationToken cancellationToken)
    {
        const int Connectors = 4;
        const int ClientsEach = 25;
        TcpServer server = await StartAsync(options => options.ProxyProtocolNetworks.Add(s_loopback), cancellationToken);
        IPEndPoint endPoint = server.LocalEndPoint!;
        var clients = new System.Collections.Concurrent.ConcurrentBag<Socket>();
        using var start = new Barrier(Connectors + 1);
        Task[] connectors = [.. Enumerable.Range(0, Connectors).Select(_ => Task.Run(
            async () =>
            {
                start.SignalAndWait(cancellationToken);
                for (int i = 0; i < ClientsEach; i++)
                {
                    var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
                    clients.Add(client);
                    try
                    {
                        await client.ConnectAsync(endPoint, cancellationToken);
                        await client.SendAsync("PROXY TCP4 "u8.ToArray(), SocketFlags.None, cancellationToken);
                    }
                    catch (SocketException)
                    {
                        // Refused or reset once the server has stopped listening.
                    }
                }
            },
            cancellationToken))];
        start.SignalAndWait(cancellationToken);
        await Poll.UntilAsync(() => server.Preamble!.Running > 0, cancellationToken);

        try
        {
            await server.StopAsync(cancellationToken);
            await Task.WhenAll(connectors);

            SocketServerCounters counters = server.Counters;
            Assert.That(counters.PoolTotalCount, Is.Positive);
            Assert.That(counters.PoolAvailableCount, Is.EqualTo(counters.PoolTotalCount));
            Assert.That(counters.TotalConnections, Is.Zero);
            Assert.That(server.StopCutShort, Is.False);
        }
        finally
        {
            await server.DisposeAsync();
            foreach (Socket client in clients)
            {
                client.Dispose();
            }
        }
    }

    /// <summary>Two clients behind the proxy with one header address: the second is closed at once; a third with another
    /// address is served, though all three come from the same socket address.</summary>
    private static async Task AssertPerAddressLimitAsync(TcpServer server, Func<string, byte[]> header, CancellationToken cancellationToken)
    {
        using Socket first = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await first.SendAllAsync(header("198.51.100.1"), cancellationToken);
        Assert.That(await ReadLineAsync(first, cancellationToken), Does.StartWith("198.51.100.1:"));

        using Socket second = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await second.SendAllAsync(header("198.51.100.1"), cancellationToken);
        Assert.That(await second.ReadEndAsync(cancellationToken), Is.Zero);

        using Socket third = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await third.SendAllAsync(header("198.51.100.2"), cancellationToken);
        Assert.That(await ReadLineAsync(third, cancellationToken), Does.StartWith("198.51.100.2:"));
        Assert.That(server.Counters.Rejected, Is.EqualTo(1));
    }

    private static Task<TcpServer> StartAsync(Action<TcpServerOptions> configure, CancellationToken cancellationToken)
    {
        var options = new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 };
        configure(options);
        return Started.StartAsync(new TcpServer(options, new AddressEchoHandler()), cancellationToken);
    }

    /// <summary>How many connections the server behind <paramref name="meter"/> closed at <paramref name="stage"/> for <paramref name="reason"/>.</summary>
    private static int Failures(MeterReader meter, string stage, string reason) => meter.Recorded("socketservers.handshake_failures")
        .Count(m => Equals(m.Tags["socketservers.handshake.stage"], stage) && Equals(m.Tags["reason"], reason));

    /// <summary>Reads up to a line feed, one byte at a time; the line without it.</summary>
    private static async Task<string> ReadLineAsync(Socket client, CancellationToken cancellationToken)
    {
        var line = new List<byte>();
        byte[] one = new byte[1];
        while (await client.ReceiveAsync(one, SocketFlags.None, cancellationToken) == 1 && one[0] != '\n')
        {
            line.Add(one[0]);
        }

        return Encoding.ASCII.GetString([.. line]);
    }

    /// <summary>Greets each connection with its <see cref="TcpConnection.RemoteEndPoint"/> on a line, then echoes.</summary>
    private sealed class AddressEchoHandler : TcpConnectionHandler
    {
        public override async ValueTask OnConnectedAsync(TcpConnection connection)
            => await connection.WriteAsync(Encoding.ASCII.GetBytes($"{connection.RemoteEndPoint}\n"));

        public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            await connection.WriteAsync(data);
            return data.Length;
        }
    }
}
