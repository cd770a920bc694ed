using System.Net;
using SocketServers;

namespace PoolLib.Tests.SocketServers;

public sealed class HostOptionsTests
{
    [Test]
    public void TryParse_NoArguments_BothServersOnLoopbackPort7007()
    {
        bool ok = HostOptions.TryParse([], out HostOptions? options, out string? error);

        Assert.That(ok, Is.True, error);
        Assert.That(options!.RunTcp, Is.True);
        Assert.That(options.RunUdp, Is.True);
        Assert.That(options.Address, Is.EqualTo(IPAddress.Loopback));
        Assert.That(options.Port, Is.EqualTo(7007));
        Assert.That(options.MaxConnections, Is.EqualTo(1000));
        Assert.That(options.BufferSize, Is.EqualTo(8192));
        Assert.That(options.IdleTimeout, Is.EqualTo(TimeSpan.FromSeconds(60)));
        Assert.That(options.UdpProcessing, Is.EqualTo(UdpProcessing.ReceiveThreads));
        Assert.That(options.UdpReceives, Is.EqualTo(1));
        Assert.That(options.UdpAllowPrivilegedPorts, Is.False);
        Assert.That(options.ShowHelp, Is.False);
    }

    [TestCase("tcp", true, false)]
    [TestCase("udp", false, true)]
    [TestCase("both", true, true)]
    public void TryParse_ServerChoice_RunsThoseServers(string choice, bool tcp, bool udp)
    {
        bool ok = HostOptions.TryParse([choice], out HostOptions? options, out _);

        Assert.That(ok, Is.True);
        Assert.That((options!.RunTcp, options.RunUdp), Is.EqualTo((tcp, udp)));
    }

    [Test]
    public void TryParse_EveryOption_SetsItsValue()
    {
        string[] args =
        [
            "tcp", "--address", "::1", "--port", "0", "--max-connections", "5", "--buffer-size=100000", "--idle-timeout", "2.5",
            "--udp-processing", "block", "--udp-receives", "3", "--udp-allow-privileged-ports",
            "--min-data-rate", "0", "--max-connections-per-address=4", "--when-full", "reject", "--stats", "7", "--reuse-port",
        ];

        bool ok = HostOptions.TryParse(args, out HostOptions? options, out string? error);

        Assert.That(ok, Is.True, error);
        Assert.That(options!.Address, Is.EqualTo(IPAddress.IPv6Loopback));
        Assert.That(options.Port, Is.Zero);
        Assert.That(options.MaxConnections, Is.EqualTo(5));
        Assert.That(options.BufferSize, Is.EqualTo(100_000));
        Assert.That(options.IdleTimeout, Is.EqualTo(TimeSpan.FromSeconds(2.5)));
        Assert.That(options.UdpProcessing, Is.EqualTo(UdpProcessing.ReplyBlock));
        Assert.That(options.UdpReceives, Is.EqualTo(3));
        Assert.That(options.UdpAllowPrivilegedPorts, Is.True);
        Assert.That(options.MinDataRate, Is.Zero);
        Assert.That(options.MaxConnectionsPerAddress, Is.EqualTo(4));
        Assert.That(options.RejectWhenFull, Is.True);
        Assert.That(options.StatsInterval, Is.EqualTo(TimeSpan.FromSeconds(7)));
        TcpEchoServerOptions tcp = options.CreateTcpOptions();
        Assert.That((tcp.MinDataRate, tcp.MaxConnectionsPerAddress, tcp.RejectWhenFull), Is.EqualTo((0, 4, true)));
        Assert.That((options.ReusePort, tcp.ReusePort, options.CreateUdpOptions().ReusePort), Is.EqualTo((true, true, true)));
    }

    [Test]
    public void TryParse_NoSlowClientOptions_KeepsTheSafeDefaults()
    {
        bool ok = HostOptions.TryParse([], out HostOptions? options, out string? error);

        Assert.That(ok, Is.True, error);
        Assert.That(options!.MinDataRate, Is.EqualTo(1024));
        Assert.That(options.MaxConnectionsPerAddress, Is.Zero);
        Assert.That(options.RejectWhenFull, Is.False);
        Assert.That(options.StatsInterval, Is.Null);
    }

    [Test]
    public void TryParse_Help_ShowsHelp()
    {
        bool ok = HostOptions.TryParse(["--port", "80", "--help"], out HostOptions? options, out _);

        Assert.That(ok, Is.True);
        Assert.That(options!.ShowHelp, Is.True);
        Assert.That(HostOptions.Usage, Does.Contain("--max-connections").And.Contain("--idle-timeout").And.Contain("--udp-allow-privileged-ports"));
    }

    [TestCase("--bogus", "unknown option '--bogus'")]
    [TestCase("sideways", "unexpected argument 'sideways'")]
    [TestCase("tcp udp", "already given")]
    [TestCase("--port", "'--port' needs a value")]
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
    [TestCase("--udp-receives 0", "'--udp-receives' expects")]
    [TestCase("--udp-receives 257", "'--udp-receives' expects")]
    [TestCase("--udp-allow-privileged-ports=yes", "'--udp-allow-privileged-ports' takes no value")]
    [TestCase("--min-data-rate -1", "'--min-data-rate' expects")]
    [TestCase("--max-connections-per-address x", "'--max-connections-per-address' expects")]
    [TestCase("--when-full drop", "'--when-full' expects queue or reject")]
    [TestCase("--reuse-port=1", "'--reuse-port' takes no value")]
    [TestCase("--stats 1.5", "'--stats' expects")]
    public void TryParse_BadArgument_FailsWithOneLine(string commandLine, string expected)
    {
        bool ok = HostOptions.TryParse(commandLine.Split(' '), out HostOptions? options, out string? error);

        Assert.That(ok, Is.False);
        Assert.That(options, Is.Null);
        Assert.That(error, Does.Contain(expected));
        Assert.That(error, Does.Not.Contain('\n'));
    }

    [Test]
    public void TryParse_NullArguments_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => HostOptions.TryParse(null!, out _, out _));

        Assert.That(exception!.ParamName, Is.EqualTo("args"));
    }

    [Test]
    public void CreateServerOptions_ParsedValues_CarriedOverWithUdpDatagramCapped()
    {
        HostOptions.TryParse(
            ["--port", "9000", "--buffer-size", "100000", "--idle-timeout", "0", "--max-connections", "7", "--udp-processing=block", "--udp-receives=2", "--udp-allow-privileged-ports"],
            out HostOptions? options,
            out _);

        TcpEchoServerOptions tcp = options!.CreateTcpOptions();
        UdpEchoServerOptions udp = options.CreateUdpOptions();

        Assert.That((tcp.Port, tcp.BufferSize, tcp.MaxConnections), Is.EqualTo((9000, 100_000, 7)));
        Assert.That(tcp.IdleTimeout, Is.EqualTo(Timeout.InfiniteTimeSpan));
        Assert.That(udp.Port, Is.EqualTo(9000));
        Assert.That(udp.MaxDatagramSize, Is.EqualTo(UdpEchoServerOptions.MaxDatagramSizeLimit));
        Assert.That((udp.Processing, udp.ConcurrentReceives), Is.EqualTo((UdpProcessing.ReplyBlock, 2)));
        Assert.That(udp.AllowPrivilegedSourcePorts, Is.True);
    }

    [Test]
    public void CreateUdpOptions_Defaults_DropPrivilegedSourcePorts()
    {
        HostOptions.TryParse([], out HostOptions? options, out _);

        UdpEchoServerOptions udp = options!.CreateUdpOptions();

        Assert.That(udp.AllowPrivilegedSourcePorts, Is.False);
    }
}
