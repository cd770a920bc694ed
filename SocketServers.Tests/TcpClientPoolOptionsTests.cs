using System.Net;
using System.Net.Sockets;

namespace SocketServers.Tests;

public sealed class TcpClientPoolOptionsTests
{
    [Test]
    public void Constructor_Defaults_KeepAliveOnAndTheSystemsBuffers()
    {
        var options = new TcpClientPoolOptions();

        Assert.That((options.EndPoint, options.HealthCheck), Is.EqualTo(((EndPoint?)null, (Func<TcpClientConnection, CancellationToken, ValueTask<bool>>?)null)));
        Assert.That((options.KeepAliveTime, options.KeepAliveInterval, options.KeepAliveRetryCount), Is.EqualTo(((TimeSpan?)TimeSpan.FromSeconds(60), TimeSpan.FromSeconds(10), 3)));
        Assert.That((options.ReceiveBufferSize, options.SendBufferSize), Is.EqualTo(((int?)null, (int?)null)));
        Assert.That(options.Pool.MaxCapacity, Is.Zero, "the cap is the user's to choose");
    }

    [Test]
    public void Setters_OutOfRange_ThrowNamingTheProperty()
    {
        var options = new TcpClientPoolOptions();

        Assert.Multiple(() =>
        {
            Assert.That(() => options.EndPoint = new UnixDomainSocketEndPoint("/tmp/redis.sock"), Throws.ArgumentException.With.Property("ParamName").EqualTo("EndPoint"));
            Assert.That(() => options.Pool = null!, Throws.ArgumentNullException.With.Property("ParamName").EqualTo("Pool"));
            Assert.That(() => options.KeepAliveTime = TimeSpan.FromMilliseconds(999), Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("KeepAliveTime"));
            Assert.That(() => options.KeepAliveTime = TimeSpan.FromSeconds(32768), Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("KeepAliveTime"));
            Assert.That(() => options.KeepAliveInterval = TimeSpan.Zero, Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("KeepAliveInterval"));
            Assert.That(() => options.KeepAliveRetryCount = 0, Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("KeepAliveRetryCount"));
            Assert.That(() => options.KeepAliveRetryCount = 128, Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("KeepAliveRetryCount"));
            Assert.That(() => options.ReceiveBufferSize = 0, Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("ReceiveBufferSize"));
            Assert.That(() => options.SendBufferSize = -1, Throws.InstanceOf<ArgumentOutOfRangeException>().With.Property("ParamName").EqualTo("SendBufferSize"));
        });
        Assert.That(options.KeepAliveRetryCount, Is.EqualTo(TcpClientPoolOptions.DefaultKeepAliveRetryCount), "a refused value changes nothing");
    }
}
