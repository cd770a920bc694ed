
namespace SocketServers.Tests;

public sealed class UdpEchoServerOptionsTests
{
    [TestCase(nameof(UdpEchoServerOptions.MaxDatagramSize), 0)]
    [TestCase(nameof(UdpEchoServerOptions.MaxDatagramSize), UdpEchoServerOptions.MaxDatagramSizeLimit + 1)]
    [TestCase(nameof(UdpEchoServerOptions.ConcurrentReceives), -1)]
    [TestCase(nameof(UdpEchoServerOptions.ConcurrentReceives), 257)]
    [TestCase(nameof(UdpEchoServerOptions.MaxPendingDatagrams), 0)]
    [TestCase(nameof(UdpEchoServerOptions.MaxPendingDatagrams), 65537)]
    [TestCase(nameof(UdpEchoServerOptions.FirstAnsweredPort), 0)]
    [TestCase(nameof(UdpEchoServerOptions.FirstAnsweredPort), 65537)]
    [TestCase(nameof(UdpEchoServerOptions.MaxRepliesPerEndpointPerSecond), -1)]
    [TestCase(nameof(UdpEchoServerOptions.ReceiveBufferSize), -1)]
    [TestCase(nameof(UdpEchoServerOptions.ReceiveBufferSize), UdpEchoServerOptions.MaxReceiveBufferSize + 1)]
    public void Setter_OutOfRange_ThrowsNamingTheProperty(string property, int value)
    {
        var options = new UdpEchoServerOptions();

        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => Set(options, property, value));

        Assert.That(exception!.ParamName, Is.EqualTo(property));
    }

    [Test]
    public void Constructor_Defaults_AreBounded()
    {
        var options = new UdpEchoServerOptions();

        Assert.That(options.MaxDatagramSize, Is.EqualTo(8192));
        Assert.That(options.ConcurrentReceives, Is.Zero, "one receive per processor");
        Assert.That(options.MaxRepliesPerEndpointPerSecond, Is.Zero, "every datagram answered");
        Assert.That(options.MaxPendingDatagrams, Is.EqualTo(256));
        Assert.That(options.Processing, Is.EqualTo(UdpProcessing.ReceiveThreads));
        Assert.That(options.AllowPrivilegedSourcePorts, Is.False, "datagrams from ports below 1024 are dropped");
        Assert.That(options.FirstAnsweredPort, Is.EqualTo(UdpEchoServerOptions.FirstUnprivilegedPort));
        Assert.That(options.ReceiveBufferSize, Is.Zero, "the system's receive buffer");
    }

    [Test]
    public void Processing_UndefinedValue_ThrowsNamingTheProperty()
    {
        var options = new UdpEchoServerOptions();

        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => options.Processing = (UdpProcessing)2);

        Assert.That(exception!.ParamName, Is.EqualTo(nameof(UdpEchoServerOptions.Processing)));
        Assert.That(options.Processing, Is.EqualTo(UdpProcessing.ReceiveThreads), "the bad value is not kept");
    }

    private static void Set(UdpEchoServerOptions options, string property, int value)
    {
        switch (property)
        {
            case nameof(UdpEchoServerOptions.MaxDatagramSize):
                options.MaxDatagramSize = value;
                break;
            case nameof(UdpEchoServerOptions.ConcurrentReceives):
                options.ConcurrentReceives = value;
                break;
            case nameof(UdpEchoServerOptions.MaxPendingDatagrams):
                options.MaxPendingDatagrams = value;
                break;
            case nameof(UdpEchoServerOptions.MaxRepliesPerEndpointPerSecond):
                options.MaxRepliesPerEndpointPerSecond = value;
                break;
            case nameof(UdpEchoServerOptions.FirstAnsweredPort):
                options.FirstAnsweredPort = value;
                break;
            case nameof(UdpEchoServerOptions.ReceiveBufferSize):
                options.ReceiveBufferSize = value;
                break;
            default:
                throw new ArgumentException($"no case for {property}", nameof(property));
        }
    }
}
