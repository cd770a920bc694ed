using System.Net;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Options;
using SocketServers.Internal;

namespace SocketServers.Tests;

public sealed class OptionsBinderTests
{
    [Test]
    public void Bind_ValidSection_SetsEveryOptionItNames()
    {
        var options = new TcpEchoServerOptions();

        OptionsBinder.Bind(
            Section(("Address", "::"), ("Port", "0"), ("IdleTimeout", "00:00:30"), ("RejectWhenFull", "true"), ("MaxConnections", "12")),
            options);

        Assert.That((options.Address, options.Port, options.IdleTimeout), Is.EqualTo((IPAddress.IPv6Any, 0, TimeSpan.FromSeconds(30))));
        Assert.That((options.RejectWhenFull, options.MaxConnections), Is.EqualTo((true, 12)));
        Assert.That(options.BufferSize, Is.EqualTo(8192), "a key not given keeps its default");
    }

    [Test]
    public void Bind_ProxyNetworksAndTlsSection_SetsThem()
    {
        var options = new TcpEchoServerOptions();

        OptionsBinder.Bind(
            Section(("ProxyProtocolNetworks", "10.0.0.0/8, 192.168.0.0/16"), ("HandshakeTimeout", "00:00:03"), ("Tls:CertificatePath", "a.pem"), ("Tls:ClientCertificateMode", "RequireCertificate"), ("Tls:MaxHandshakesInFlight", "7")),
            options);

        Assert.That(options.ProxyProtocolNetworks, Is.EqualTo(new[] { IPNetwork.Parse("10.0.0.0/8"), IPNetwork.Parse("192.168.0.0/16") }));
        Assert.That(options.HandshakeTimeout, Is.EqualTo(TimeSpan.FromSeconds(3)));
        Assert.That((options.Tls.CertificatePath, options.Tls.ClientCertificateMode, options.Tls.MaxHandshakesInFlight), Is.EqualTo(("a.pem", ClientCertificateMode.RequireCertificate, 7)));
    }

    [Test]
    public void Bind_ProxyNetworksAsArray_SetsThem()
    {
        var options = new TcpEchoServerOptions();

        OptionsBinder.Bind(Section(("ProxyProtocolNetworks:0", "10.0.0.0/8"), ("ProxyProtocolNetworks:1", "::1/128")), options);

        Assert.That(options.ProxyProtocolNetworks, Is.EqualTo(new[] { IPNetwork.Parse("10.0.0.0/8"), IPNetwork.Parse("::1/128") }));
    }

    [Test]
    public void Bind_UdpProcessingByName_SetsTheEnum()
    {
        var options = new UdpEchoServerOptions();

        OptionsBinder.Bind(Section(("Processing", "ReplyBlock"), ("ConcurrentReceives", "2")), options);

        Assert.That((options.Processing, options.ConcurrentReceives), Is.EqualTo((UdpProcessing.ReplyBlock, 2)));
    }

    [TestCase("Prot", "1", "'Echo:Tcp:Prot' is not a setting of TcpEchoServerOptions")]
    [TestCase("MaxDatagramSize", "1", "'Echo:Tcp:MaxDatagramSize' is not a setting of TcpEchoServerOptions")]
    [TestCase("Address", "localhost", "'Echo:Tcp:Address' expects an IP address")]
    [TestCase("Port", "99999", "'Echo:Tcp:Port' = '99999'")]
    [TestCase("Port", "abc", "'Echo:Tcp:Port'")]
    [TestCase("IdleTimeout", "00:00:00", "'Echo:Tcp:IdleTimeout'")]
    [TestCase("ProxyProtocolNetworks", "10.0.0.0/8,nginx", "'Echo:Tcp:ProxyProtocolNetworks' expects networks in CIDR notation")]
    [TestCase("Tls:MaxHandshakesInFlight", "0", "'Echo:Tcp:Tls:MaxHandshakesInFlight' = '0'")]
    [TestCase("Tls:CertificatFile", "a.pem", "'Echo:Tcp:Tls:CertificatFile' is not a setting of TlsOptions")]
    [TestCase("Tls:ClientCertificateMode", "Maybe", "'Echo:Tcp:Tls:ClientCertificateMode' expects NoCertificate or AllowCertificate or RequireCertificate")]
    [TestCase("HandshakeTimeout", "00:00:00", "'Echo:Tcp:HandshakeTimeout'")]
    public void Bind_InvalidKeyOrValue_ThrowsNamingTheKey(string key, string value, string expected)
    {
        var exception = Assert.Throws<OptionsValidationException>(() => OptionsBinder.Bind(Section((key, value)), new TcpEchoServerOptions()));

        Assert.That(exception!.Message, Does.Contain(expected));
        Assert.That(exception.Message, Does.Not.Contain('\n'));
    }

    // The binder's own message named the type (SocketServers.UdpProcessing), which tells the user nothing to write.
    [TestCase("Threads")]
    [TestCase("7")]
    public void Bind_UdpProcessingNotAName_ThrowsListingTheNames(string value)
    {
        var exception = Assert.Throws<OptionsValidationException>(() => OptionsBinder.Bind(Section(("Processing", value)), new UdpEchoServerOptions()));

        Assert.That(exception!.Message, Is.EqualTo($"'Echo:Tcp:Processing' expects ReceiveThreads or ReplyBlock, not '{value}'."));
    }

    [Test]
    public void Bind_ValueWhereTheSectionBelongs_ThrowsNamingIt()
    {
        IConfigurationSection section = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Echo:Tcp"] = "5" })
            .Build()
            .GetSection("Echo:Tcp");

        var exception = Assert.Throws<OptionsValidationException>(() => OptionsBinder.Bind(section, new TcpEchoServerOptions()));

        Assert.That(exception!.Message, Does.Contain("'Echo:Tcp' holds the value '5'"));
    }

    // As in the host, where a file gave "Port": { "A": 1 } and the command line --port 0: the command line's value hid
    // the key under it from the binder, and the file's mistake passed silently.
    [Test]
    public void Bind_KeyUnderAnOptionThatAnotherSourceGivesAValue_ThrowsNamingIt()
    {
        IConfigurationSection section = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Echo:Tcp:Port:A"] = "1" })
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Echo:Tcp:Port"] = "0" })
            .Build()
            .GetSection("Echo:Tcp");

        var exception = Assert.Throws<OptionsValidationException>(() => OptionsBinder.Bind(section, new TcpEchoServerOptions()));

        Assert.That(exception!.Message, Is.EqualTo("'Echo:Tcp:Port' is a section ('Echo:Tcp:Port:A'); it should be a value."));
    }

    [Test]
    public void Bind_ClientPoolSection_SetsEveryOptionItNamesAndThePoolsFromItsSection()
    {
        var options = new TcpClientPoolOptions();

        OptionsBinder.Bind(
            ClientSection(("EndPoint", "[::1]:6380"), ("KeepAliveTime", "00:02:00"), ("KeepAliveRetryCount", "5"), ("SendBufferSize", "65536"),
                ("Pool:MaxCapacity", "16"), ("Pool:CreateTimeout", "00:00:05"), ("Pool:ValidateAfterIdle", "00:00:30")),
            options);

        Assert.That(options.EndPoint, Is.EqualTo(new IPEndPoint(IPAddress.IPv6Loopback, 6380)));
        Assert.That((options.KeepAliveTime, options.KeepAliveRetryCount, options.SendBufferSize), Is.EqualTo(((TimeSpan?)TimeSpan.FromMinutes(2), 5, (int?)65536)));
        Assert.That((options.Pool.MaxCapacity, options.Pool.CreateTimeout, options.Pool.ValidateAfterIdle), Is.EqualTo((16, (TimeSpan?)TimeSpan.FromSeconds(5), (TimeSpan?)TimeSpan.FromSeconds(30))));
        Assert.That(options.KeepAliveInterval, Is.EqualTo(TcpClientPoolOptions.DefaultKeepAliveInterval), "a key not given keeps its default");
    }

    [Test]
    public void Bind_ClientPoolEndPointByName_SetsADnsEndPoint()
    {
        var options = new TcpClientPoolOptions();

        OptionsBinder.Bind(ClientSection(("EndPoint", "redis.internal:6379"), ("Pool:MaxCapacity", "4")), options);

        Assert.That(options.EndPoint, Is.EqualTo(new DnsEndPoint("redis.internal", 6379)));
    }

    [TestCase("Prot", "1", "'Redis:Prot' is not a setting of TcpClientPoolOptions")]
    [TestCase("HealthCheck", "ping", "'Redis:HealthCheck' is not a setting of TcpClientPoolOptions")]
    [TestCase("EndPoint", "localhost", "'Redis:EndPoint' expects an address or a host name and a port")]
    [TestCase("EndPoint", "127.0.0.1", "'Redis:EndPoint' expects an address or a host name and a port")]
    [TestCase("EndPoint", "redis:0", "'Redis:EndPoint' expects an address or a host name and a port")]
    [TestCase("EndPoint", "redis:70000", "'Redis:EndPoint' expects an address or a host name and a port")]
    [TestCase("KeepAliveTime", "00:00:00", "'Redis:KeepAliveTime' = '00:00:00'")]
    [TestCase("KeepAliveRetryCount", "abc", "'Redis:KeepAliveRetryCount'")]
    [TestCase("ReceiveBufferSize", "0", "'Redis:ReceiveBufferSize' = '0'")]
    [TestCase("Pool:MaxCapacity", "0", "'Redis:Pool:MaxCapacity' = '0'")]
    [TestCase("Pool:MaxCapacty", "4", "'Redis:Pool:MaxCapacty' is not a setting of PoolOptions")]
    [TestCase("Pool", "4", "'Redis:Pool' holds the value '4'")]
    [TestCase("EndPoint:Host", "redis", "'Redis:EndPoint' is a section ('Redis:EndPoint:Host'); it should be a value.")]
    public void Bind_ClientPoolInvalidKeyOrValue_ThrowsNamingTheKey(string key, string value, string expected)
    {
        var exception = Assert.Throws<OptionsValidationException>(() => OptionsBinder.Bind(ClientSection((key, value)), new TcpClientPoolOptions()));

        Assert.That(exception!.Message, Does.Contain(expected));
        Assert.That(exception.Message, Does.Not.Contain('\n'));
        Assert.That(exception.OptionsType, Is.EqualTo(typeof(TcpClientPoolOptions)));
    }

    private static IConfigurationSection ClientSection(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder()
            .AddInMemoryCollection(values.Select(pair => KeyValuePair.Create("Redis:" + pair.Key, (string?)pair.Value)))
            .Build()
            .GetSection("Redis");

    private static IConfigurationSection Section(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder()
            .AddInMemoryCollection(values.Select(pair => KeyValuePair.Create("Echo:Tcp:" + pair.Key, (string?)pair.Value)))
            .Build()
            .GetSection("Echo:Tcp");
}
