using System.CommandLine;
using System.Net;
using Microsoft.Extensions.Configuration;
using SocketServers.Host;
using SocketServers.Internal;

namespace SocketServers.Tests;

/// <summary>The console host's command line, and the settings it leaves in the configuration the host reads.</summary>
public sealed class HostCommandLineTests
{
    [Test]
    public void Parse_NoArguments_BothServersWithTheOptionsDefaults()
    {
        (HostSettings host, TcpEchoServerOptions tcp, UdpEchoServerOptions udp) = Settings();

        Assert.That((host.RunTcp, host.RunUdp, host.StatsInterval), Is.EqualTo((true, true, (TimeSpan?)null)));
        Assert.That((tcp.Address, tcp.Port, udp.Address, udp.Port), Is.EqualTo((IPAddress.Loopback, 7007, IPAddress.Loopback, 7007)));
        Assert.That((tcp.MaxConnections, tcp.BufferSize, tcp.IdleTimeout), Is.EqualTo((1000, 8192, TimeSpan.FromSeconds(60))));
        Assert.That((tcp.MinDataRate, tcp.MaxConnectionsPerAddress, tcp.RejectWhenFull, tcp.ReusePort), Is.EqualTo((1024, 0, false, false)));
        Assert.That((udp.MaxDatagramSize, udp.Processing, udp.ConcurrentReceives), Is.EqualTo((8192, UdpProcessing.ReceiveThreads, 0)));
        Assert.That((udp.AllowPrivilegedSourcePorts, udp.MaxRepliesPerEndpointPerSecond, udp.ReusePort), Is.EqualTo((false, 0, false)));
    }

    [Test]
    public void ToConfiguration_NoArguments_SetsNothing()
    {
        var commandLine = new HostCommandLine();

        Assert.That(commandLine.ToConfiguration(commandLine.Parse([])), Is.Empty, "appsettings.json and the environment stay in force");
    }

    [TestCase("tcp", true, false)]
    [TestCase("udp", false, true)]
    [TestCase("both", true, true)]
    public void Parse_ServerChoice_RunsThoseServers(string choice, bool tcp, bool udp)
    {
        HostSettings host = Settings(choice).Host;

        Assert.That((host.RunTcp, host.RunUdp), Is.EqualTo((tcp, udp)));
    }

    [Test]
    public void Parse_EveryOption_SetsItsValue()
    {
        (HostSettings host, TcpEchoServerOptions tcp, UdpEchoServerOptions udp) = Settings(
            "tcp", "--address", "::1", "--port", "0", "--max-connections", "5", "--buffer-size=100000", "--max-message-size", "200000", "--idle-timeout", "2.5",
            "--udp-processing", "block", "--udp-receives", "3", "--udp-allow-privileged-ports", "--udp-max-replies-per-endpoint", "200", "--udp-receive-buffer", "65536",
            "--min-data-rate", "0", "--max-connections-per-address=4", "--when-full", "reject", "--stats", "7", "--reuse-port", "--maxmemory", "3000000000");

        Assert.That((host.RunTcp, host.RunUdp, host.StatsInterval), Is.EqualTo((true, false, (TimeSpan?)TimeSpan.FromSeconds(7))));
        Assert.That(host.RespMaxMemory, Is.EqualTo(3_000_000_000));
        Assert.That((tcp.Address, udp.Address), Is.EqualTo((IPAddress.IPv6Loopback, IPAddress.IPv6Loopback)));
        Assert.That((tcp.Port, udp.Port), Is.EqualTo((0, 0)));
        Assert.That((tcp.MaxConnections, tcp.BufferSize, tcp.IdleTimeout), Is.EqualTo((5, 100_000, TimeSpan.FromSeconds(2.5))));
        Assert.That(tcp.MaxMessageSize, Is.EqualTo(200_000));
        Assert.That((tcp.MinDataRate, tcp.MaxConnectionsPerAddress, tcp.RejectWhenFull), Is.EqualTo((0, 4, true)));
        Assert.That((udp.Processing, udp.ConcurrentReceives, udp.AllowPrivilegedSourcePorts), Is.EqualTo((UdpProcessing.ReplyBlock, 3, true)));
        Assert.That((udp.MaxRepliesPerEndpointPerSecond, udp.ReceiveBufferSize), Is.EqualTo((200, 65536)));
        Assert.That((tcp.ReusePort, udp.ReusePort), Is.EqualTo((true, true)));
    }

    [Test]
    public void Parse_ProxyAndTlsOptions_SetTheirValues()
    {
        (_, TcpEchoServerOptions tcp, _) = Settings(
            "tcp", "--proxy-protocol", "10.0.0.0/8,fd00::/8", "--tls-cert", "server.crt", "--tls-key", "server.key", "--tls-handshake-timeout", "2.5");

        Assert.That(tcp.ProxyProtocolNetworks, Is.EqualTo(new[] { IPNetwork.Parse("10.0.0.0/8"), IPNetwork.Parse("fd00::/8") }));
        Assert.That((tcp.Tls.CertificatePath, tcp.Tls.KeyPath), Is.EqualTo(("server.crt", "server.key")));
        Assert.That(tcp.HandshakeTimeout, Is.EqualTo(TimeSpan.FromSeconds(2.5)));
    }

    [Test]
    public void Parse_BufferSizeAboveTheDatagramLimit_UdpDatagramCapped()
    {
        (_, TcpEchoServerOptions tcp, UdpEchoServerOptions udp) = Settings("--buffer-size", "100000");

        Assert.That((tcp.BufferSize, udp.MaxDatagramSize), Is.EqualTo((100_000, UdpEchoServerOptions.MaxDatagramSizeLimit)));
    }

    [Test]
    public void Parse_IdleTimeoutZero_NeverClosesIdleConnections()
    {
        Assert.That(Settings("--idle-timeout", "0").Tcp.IdleTimeout, Is.EqualTo(Timeout.InfiniteTimeSpan));
    }

    [Test]
    public void ToConfiguration_OptionGiven_OverridesTheSameSettingFromAppSettings()
    {
        var appSettings = new Dictionary<string, string?> { ["SocketServers:Tcp:Port"] = "9000", ["SocketServers:Tcp:MaxConnections"] = "3" };

        TcpEchoServerOptions tcp = Settings(appSettings, "--port", "9001").Tcp;

        Assert.That((tcp.Port, tcp.MaxConnections), Is.EqualTo((9001, 3)));
    }

    [Test]
    public void Parse_Help_IsAnActionThatRunsNoServer()
    {
        var commandLine = new HostCommandLine();

        ParseResult result = commandLine.Parse(["--port", "80", "--help"]);

        Assert.That(result.Errors, Is.Empty);
        Assert.That(result.Action, Is.Not.Null);
    }

    [TestCase("--bogus", "unknown option '--bogus'")]
    [TestCase("sideways", "unexpected argument 'sideways'")]
    [TestCase("tcp udp", "'udp'")]
    [TestCase("--port", "'--port'")]
    [TestCase("--port 65536", "'--port' expects")]
    [TestCase("--port -1", "'--port' expects")]
    [TestCase("--port 12ab", "'--port' expects")]
    [TestCase("--max-connections 0", "'--max-connections' expects")]
    [TestCase("--buffer-size 0", "'--buffer-size' expects")]
    [TestCase("--buffer-size 2000000", "'--buffer-size' expects")]
    [TestCase("--address localhost", "'--address' expects an IP address")]
    [TestCase("--idle-timeout -1", "'--idle-timeout' expects")]
    [TestCase("--idle-timeout NaN", "'--idle-timeout' expects")]
    [TestCase("--idle-timeout 0.0000001", "'--idle-timeout' expects")]
    [TestCase("--udp-processing inline", "'--udp-processing' expects threads or block")]
    [TestCase("--udp-receives -1", "'--udp-receives' expects")]
    [TestCase("--udp-receives 257", "'--udp-receives' expects")]
    [TestCase("--udp-max-replies-per-endpoint -5", "'--udp-max-replies-per-endpoint' expects")]
    [TestCase("--udp-allow-privileged-ports=yes", "'yes'")]
    [TestCase("--min-data-rate -1", "'--min-data-rate' expects")]
    [TestCase("--max-connections-per-address x", "'--max-connections-per-address' expects")]
    [TestCase("--when-full drop", "'--when-full' expects queue or reject")]
    [TestCase("--stats 1.5", "'--stats' expects")]
    [TestCase("--maxmemory -1", "'--maxmemory' expects")]
    [TestCase("--maxmemory 1k", "'--maxmemory' expects")]
    [TestCase("--proxy-protocol 10.0.0.1", "'--proxy-protocol' expects networks in CIDR notation")]
    [TestCase("--proxy-protocol 10.0.0.0/8,nginx", "not 'nginx'")]
    [TestCase("--tls-handshake-timeout 0", "'--tls-handshake-timeout' expects")]
    [TestCase("--tls-handshake-timeout 3601", "'--tls-handshake-timeout' expects")]
    public void Parse_BadArgument_FailsNamingIt(string commandLine, string expected)
    {
        ParseResult result = new HostCommandLine().Parse(commandLine.Split(' '));

        Assert.That(result.Errors, Is.Not.Empty);
        Assert.That(result.Errors[0].Message, Does.Contain(expected));
    }

    private static (HostSettings Host, TcpEchoServerOptions Tcp, UdpEchoServerOptions Udp) Settings(params string[] args) =>
        Settings(new Dictionary<string, string?>(), args);

    /// <summary>What the host would run with: <paramref name="appSettings"/>, then the command line on top.</summary>
    private static (HostSettings Host, TcpEchoServerOptions Tcp, UdpEchoServerOptions Udp) Settings(
        Dictionary<string, string?> appSettings, params string[] args)
    {
        var commandLine = new HostCommandLine();
        ParseResult result = commandLine.Parse(args);
        Assert.That(result.Errors, Is.Empty, () => result.Errors[0].Message);
        IConfigurationRoot configuration = new ConfigurationBuilder()
            .AddInMemoryCollection(appSettings)
            .AddInMemoryCollection(commandLine.ToConfiguration(result))
            .Build();
        var tcp = new TcpEchoServerOptions();
        OptionsBinder.Bind(configuration.GetSection(HostSettings.TcpSection), tcp);
        var udp = new UdpEchoServerOptions();
        OptionsBinder.Bind(configuration.GetSection(HostSettings.UdpSection), udp);
        return (HostSettings.Read(configuration), tcp, udp);
    }
}
