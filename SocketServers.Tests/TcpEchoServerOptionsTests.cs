
namespace SocketServers.Tests;

public sealed class TcpEchoServerOptionsTests
{
    [Test]
    public void Constructor_Defaults_AreBoundedAndOnLoopback()
    {
        var options = new TcpEchoServerOptions();

        Assert.That(options.Address, Is.EqualTo(System.Net.IPAddress.Loopback));
        Assert.That(options.Port, Is.EqualTo(SocketServerOptions.DefaultPort));
        Assert.That(options.MaxConnections, Is.EqualTo(1000));
        Assert.That(options.BufferSize, Is.EqualTo(8192));
        Assert.That(options.IdleTimeout, Is.EqualTo(TimeSpan.FromSeconds(60)));
        Assert.That(options.StopGracePeriod, Is.EqualTo(TimeSpan.FromSeconds(5)));
    }

    [TestCase(nameof(TcpEchoServerOptions.Port), -1)]
    [TestCase(nameof(TcpEchoServerOptions.Port), 65536)]
    [TestCase(nameof(TcpEchoServerOptions.MaxConnections), 0)]
    [TestCase(nameof(TcpEchoServerOptions.MaxConnections), TcpEchoServerOptions.MaxConnectionsLimit + 1)]
    [TestCase(nameof(TcpEchoServerOptions.BufferSize), 0)]
    [TestCase(nameof(TcpEchoServerOptions.BufferSize), TcpEchoServerOptions.MaxBufferSize + 1)]
    [TestCase(nameof(TcpEchoServerOptions.ListenBacklog), 0)]
    [TestCase(nameof(TcpEchoServerOptions.MinDataRate), -1)]
    [TestCase(nameof(TcpEchoServerOptions.MaxConnectionsPerAddress), -1)]
    public void Setter_OutOfRange_ThrowsNamingTheProperty(string property, int value)
    {
        var options = new TcpEchoServerOptions();

        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => Set(options, property, value));

        Assert.That(exception!.ParamName, Is.EqualTo(property));
    }

    [Test]
    public void Constructor_SlowClientDefaults_EvictBelowOneKiBPerSecondAndQueueWhenFull()
    {
        var options = new TcpEchoServerOptions();

        Assert.That(options.MinDataRate, Is.EqualTo(1024));
        Assert.That(options.SlowConnectionWindow, Is.EqualTo(TimeSpan.FromSeconds(2)));
        Assert.That(options.MaxConnectionsPerAddress, Is.Zero);
        Assert.That(options.RejectWhenFull, Is.False);
    }

    [TestCase(0)]
    [TestCase(-1)]
    [TestCase(3_600_001)]
    public void SlowConnectionWindow_OutOfRange_ThrowsNamingIt(int milliseconds)
    {
        var options = new TcpEchoServerOptions();

        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => options.SlowConnectionWindow = TimeSpan.FromMilliseconds(milliseconds));

        Assert.That(exception!.ParamName, Is.EqualTo(nameof(TcpEchoServerOptions.SlowConnectionWindow)));
    }

    [Test]
    public void IdleTimeout_ZeroOrNegative_Throws()
    {
        var options = new TcpEchoServerOptions();

        Assert.Throws<ArgumentOutOfRangeException>(() => options.IdleTimeout = TimeSpan.Zero);
        Assert.Throws<ArgumentOutOfRangeException>(() => options.IdleTimeout = TimeSpan.FromSeconds(-1));
        Assert.DoesNotThrow(() => options.IdleTimeout = Timeout.InfiniteTimeSpan);
    }

    [Test]
    public void Address_Null_Throws()
    {
        var options = new TcpEchoServerOptions();

        var exception = Assert.Throws<ArgumentNullException>(() => options.Address = null!);

        Assert.That(exception!.ParamName, Is.EqualTo(nameof(TcpEchoServerOptions.Address)));
    }

    [Test]
    public void StopGracePeriod_Negative_Throws()
    {
        var options = new TcpEchoServerOptions();

        Assert.Throws<ArgumentOutOfRangeException>(() => options.StopGracePeriod = TimeSpan.FromTicks(-1));
    }

    private static void Set(TcpEchoServerOptions options, string property, int value)
    {
        switch (property)
        {
            case nameof(TcpEchoServerOptions.Port):
                options.Port = value;
                break;
            case nameof(TcpEchoServerOptions.MaxConnections):
                options.MaxConnections = value;
                break;
            case nameof(TcpEchoServerOptions.BufferSize):
                options.BufferSize = value;
                break;
            case nameof(TcpEchoServerOptions.MinDataRate):
                options.MinDataRate = value;
                break;
            case nameof(TcpEchoServerOptions.MaxConnectionsPerAddress):
                options.MaxConnectionsPerAddress = value;
                break;
            case nameof(TcpEchoServerOptions.ListenBacklog):
                options.ListenBacklog = value;
                break;
            default:
                throw new ArgumentException($"no case for {property}", nameof(property));
        }
    }
}
