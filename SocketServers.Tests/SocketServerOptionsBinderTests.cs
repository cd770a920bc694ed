using System.Net;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Options;
using SocketServers.Internal;

namespace SocketServers.Tests;

public sealed class SocketServerOptionsBinderTests
{
    [Test]
    public void Bind_ValidSection_SetsEveryOptionItNames()
    {
        var options = new TcpEchoServerOptions();

        SocketServerOptionsBinder.Bind(
            Section(("Address", "::"), ("Port", "0"), ("IdleTimeout", "00:00:30"), ("RejectWhenFull", "true"), ("MaxConnections", "12")),
            options);

        Assert.That((options.Address, options.Port, options.IdleTimeout), Is.EqualTo((IPAddress.IPv6Any, 0, TimeSpan.FromSeconds(30))));
        Assert.That((options.RejectWhenFull, options.MaxConnections), Is.EqualTo((true, 12)));
        Assert.That(options.BufferSize, Is.EqualTo(8192), "a key not given keeps its default");
    }

    [Test]
    public void Bind_UdpProcessingByName_SetsTheEnum()
    {
        var options = new UdpEchoServerOptions();

        SocketServerOptionsBinder.Bind(Section(("Processing", "ReplyBlock"), ("ConcurrentReceives", "2")), options);

        Assert.That((options.Processing, options.ConcurrentReceives), Is.EqualTo((UdpProcessing.ReplyBlock, 2)));
    }

    [TestCase("Prot", "1", "'Echo:Tcp:Prot' is not a setting of TcpEchoServerOptions")]
    [TestCase("MaxDatagramSize", "1", "'Echo:Tcp:MaxDatagramSize' is not a setting of TcpEchoServerOptions")]
    [TestCase("Address", "localhost", "'Echo:Tcp:Address' expects an IP address")]
    [TestCase("Port", "99999", "'Echo:Tcp:Port' = '99999'")]
    [TestCase("Port", "abc", "'Echo:Tcp:Port'")]
    [TestCase("IdleTimeout", "00:00:00", "'Echo:Tcp:IdleTimeout'")]
    public void Bind_InvalidKeyOrValue_ThrowsNamingTheKey(string key, string value, string expected)
    {
        var exception = Assert.Throws<OptionsValidationException>(() => SocketServerOptionsBinder.Bind(Section((key, value)), new TcpEchoServerOptions()));

        Assert.That(exception!.Message, Does.Contain(expected));
        Assert.That(exception.Message, Does.Not.Contain('\n'));
    }

    // The binder's own message named the type (SocketServers.UdpProcessing), which tells the user nothing to write.
    [TestCase("Threads")]
    [TestCase("7")]
    public void Bind_UdpProcessingNotAName_ThrowsListingTheNames(string value)
    {
        var exception = Assert.Throws<OptionsValidationException>(() => SocketServerOptionsBinder.Bind(Section(("Processing", value)), new UdpEchoServerOptions()));

        Assert.That(exception!.Message, Is.EqualTo($"'Echo:Tcp:Processing' expects ReceiveThreads or ReplyBlock, not '{value}'."));
    }

    [Test]
    public void Bind_ValueWhereTheSectionBelongs_ThrowsNamingIt()
    {
        IConfigurationSection section = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Echo:Tcp"] = "5" })
            .Build()
            .GetSection("Echo:Tcp");

        var exception = Assert.Throws<OptionsValidationException>(() => SocketServerOptionsBinder.Bind(section, new TcpEchoServerOptions()));

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

        var exception = Assert.Throws<OptionsValidationException>(() => SocketServerOptionsBinder.Bind(section, new TcpEchoServerOptions()));

        Assert.That(exception!.Message, Is.EqualTo("'Echo:Tcp:Port' is a section ('Echo:Tcp:Port:A'); it should be a value."));
    }

    private static IConfigurationSection Section(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder()
            .AddInMemoryCollection(values.Select(pair => KeyValuePair.Create("Echo:Tcp:" + pair.Key, (string?)pair.Value)))
            .Build()
            .GetSection("Echo:Tcp");
}
