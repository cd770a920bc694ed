using System.Buffers.Binary;
using System.Net;
using System.Text;
using SocketServers.Internal;

namespace SocketServers.Tests;

[TestFixture]
public sealed class ProxyHeaderParserTests
{
    private static readonly byte[] s_v2Signature = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A];

    [TestCase("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n", "192.168.0.1:56324")]
    [TestCase("PROXY TCP4 0.0.0.0 255.255.255.255 0 65535\r\n", "0.0.0.0:0")]
    [TestCase("PROXY TCP6 2001:db8::1 2001:db8::2 1234 443\r\n", "[2001:db8::1]:1234")]
    [TestCase("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535")]
    public void Consume_V1Header_CompletesWithItsSource(string header, string source)
    {
        ProxyHeaderParser parser = ConsumeAll(Encoding.ASCII.GetBytes(header), out int taken);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(parser.Source, Is.EqualTo(IPEndPoint.Parse(source)));
        Assert.That(taken, Is.EqualTo(header.Length));
    }

    [TestCase("PROXY UNKNOWN\r\n")]
    [TestCase("PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n")]
    public void Consume_V1Unknown_CompletesWithoutSource(string header)
    {
        ProxyHeaderParser parser = ConsumeAll(Encoding.ASCII.GetBytes(header), out int taken);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(parser.Source, Is.Null);
        Assert.That(taken, Is.EqualTo(header.Length));
    }

    [TestCase("GET / HTTP/1.1\r\n", TestName = "Consume_V1NotProxy_IsInvalid")]
    [TestCase("PROXZ TCP4 1.2.3.4 5.6.7.8 1 2\r\n", TestName = "Consume_V1WrongPrefix_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", TestName = "Consume_V1LineFeedWithoutReturn_IsInvalid")]
    [TestCase("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", TestName = "Consume_V1UnknownProtocol_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", TestName = "Consume_V1ExtraField_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", TestName = "Consume_V1MissingField_IsInvalid")]
    [TestCase("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n", TestName = "Consume_V1DoubleSpace_IsInvalid")]
    [TestCase("PROXY TCP4 ::1 ::1 1 2\r\n", TestName = "Consume_V1Tcp4WithIPv6_IsInvalid")]
    [TestCase("PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n", TestName = "Consume_V1Tcp6WithIPv4_IsInvalid")]
    [TestCase("PROXY TCP4 1 5.6.7.8 1 2\r\n", TestName = "Consume_V1ShorthandAddress_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", TestName = "Consume_V1PortTooLarge_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n", TestName = "Consume_V1PortLeadingZero_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n", TestName = "Consume_V1NegativePort_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4 5.6.7.8 1 x\r\n", TestName = "Consume_V1PortNotNumber_IsInvalid")]
    [TestCase("PROXY TCP4 1.2.3.4\r 5.6.7.8 1 2\r\n", TestName = "Consume_V1ReturnInside_IsInvalid")]
    [TestCase("PROXY TCP6 fe80::1%eth0 fe80::2 1 2\r\n", TestName = "Consume_V1ScopedAddress_IsInvalid")]
    [TestCase("PROXY\r\n", TestName = "Consume_V1NoProtocol_IsInvalid")]
    public void Consume_MalformedV1_IsInvalid(string header)
    {
        ProxyHeaderParser parser = ConsumeAll(Encoding.ASCII.GetBytes(header), out _);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Invalid));
    }

    [Test]
    public void Consume_V1NonAscii_IsInvalid()
    {
        byte[] header = Encoding.ASCII.GetBytes("PROXY UNKNOWN x\r\n");
        header[14] = 0xE9;

        Assert.That(ConsumeAll(header, out _).Status, Is.EqualTo(ProxyHeaderStatus.Invalid));
    }

    [Test]
    public void Consume_V1WithoutLineEndWithinBound_IsInvalidAtTheBound()
    {
        byte[] bytes = Encoding.ASCII.GetBytes("PROXY UNKNOWN " + new string('x', 200));
        var parser = new ProxyHeaderParser();

        int taken = parser.Consume(bytes);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Invalid));
        Assert.That(taken, Is.EqualTo(ProxyHeaderParser.MaxV1Length));
    }

    [Test]
    public void Consume_V1FollowedByData_TakesTheHeaderAlone()
    {
        byte[] header = Encoding.ASCII.GetBytes("PROXY TCP4 10.0.0.1 10.0.0.2 1000 80\r\n");
        var parser = new ProxyHeaderParser();

        int taken = parser.Consume([.. header, .. "PING\r\n"u8]);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(taken, Is.EqualTo(header.Length));
        Assert.That(parser.Consume("PING"u8), Is.Zero);
    }

    [Test]
    public void Consume_V2ProxyInet_CompletesWithItsSource()
    {
        byte[] header = V2(0x21, 0x11, [10, 1, 2, 3, 192, 168, 0, 1, 0x13, 0x88, 0x01, 0xBB]);

        ProxyHeaderParser parser = ConsumeAll(header, out int taken);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(parser.Source, Is.EqualTo(IPEndPoint.Parse("10.1.2.3:5000")));
        Assert.That(taken, Is.EqualTo(28));
    }

    [Test]
    public void Consume_V2ProxyInet6_CompletesWithItsSource()
    {
        byte[] addresses = new byte[36];
        IPAddress.Parse("2001:db8::7").GetAddressBytes().CopyTo(addresses, 0);
        IPAddress.Parse("2001:db8::8").GetAddressBytes().CopyTo(addresses, 16);
        BinaryPrimitives.WriteUInt16BigEndian(addresses.AsSpan(32), 4242);
        BinaryPrimitives.WriteUInt16BigEndian(addresses.AsSpan(34), 443);

        ProxyHeaderParser parser = ConsumeAll(V2(0x21, 0x21, addresses), out int taken);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(parser.Source, Is.EqualTo(IPEndPoint.Parse("[2001:db8::7]:4242")));
        Assert.That(taken, Is.EqualTo(52));
    }

    [Test]
    public void Consume_V2WithTlvs_SkipsThemAndTakesTheWholeHeader()
    {
        byte[] body = [10, 0, 0, 9, 10, 0, 0, 1, 0, 80, 0, 81, .. Enumerable.Repeat((byte)0xAB, 600)];

        ProxyHeaderParser parser = ConsumeAll(V2(0x21, 0x11, body), out int taken);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(parser.Source, Is.EqualTo(IPEndPoint.Parse("10.0.0.9:80")));
        Assert.That(taken, Is.EqualTo(16 + body.Length));
    }

    [TestCase(0x20, 0x11, 12, TestName = "Consume_V2Local_KeepsTheSocketsAddress")]
    [TestCase(0x20, 0x00, 0, TestName = "Consume_V2LocalEmpty_KeepsTheSocketsAddress")]
    [TestCase(0x21, 0x00, 0, TestName = "Consume_V2ProxyUnspecified_KeepsTheSocketsAddress")]
    [TestCase(0x21, 0x31, 216, TestName = "Consume_V2ProxyUnix_KeepsTheSocketsAddress")]
    public void Consume_V2WithoutUsableAddress_CompletesWithoutSource(int versionAndCommand, int family, int length)
    {
        ProxyHeaderParser parser = ConsumeAll(V2((byte)versionAndCommand, (byte)family, new byte[length]), out int taken);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(parser.Source, Is.Null);
        Assert.That(taken, Is.EqualTo(16 + length));
    }

    [TestCase(0x11, 0x11, 12, TestName = "Consume_V2WrongVersion_IsInvalid")]
    [TestCase(0x22, 0x11, 12, TestName = "Consume_V2UnknownCommand_IsInvalid")]
    [TestCase(0x21, 0x41, 12, TestName = "Consume_V2UnknownFamily_IsInvalid")]
    [TestCase(0x21, 0x13, 12, TestName = "Consume_V2UnknownTransport_IsInvalid")]
    [TestCase(0x21, 0x12, 12, TestName = "Consume_V2Datagram_IsInvalid")]
    [TestCase(0x21, 0x11, 11, TestName = "Consume_V2Inet4TooShort_IsInvalid")]
    [TestCase(0x21, 0x21, 35, TestName = "Consume_V2Inet6TooShort_IsInvalid")]
    public void Consume_MalformedV2_IsInvalid(int versionAndCommand, int family, int length)
    {
        ProxyHeaderParser parser = ConsumeAll(V2((byte)versionAndCommand, (byte)family, new byte[length]), out _);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Invalid));
    }

    [Test]
    public void Consume_V2SignatureWrong_IsInvalidAtTheWrongByte()
    {
        byte[] header = V2(0x21, 0x11, new byte[12]);
        header[7] = (byte)'X';
        var parser = new ProxyHeaderParser();

        int taken = parser.Consume(header);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Invalid));
        Assert.That(taken, Is.EqualTo(8));
    }

    [Test]
    public void Consume_V2FollowedByData_TakesTheHeaderAlone()
    {
        byte[] header = V2(0x20, 0x00, []);
        var parser = new ProxyHeaderParser();

        int taken = parser.Consume([.. header, .. "PROXY TCP4"u8]);

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete));
        Assert.That(taken, Is.EqualTo(16));
    }

    [Test]
    public void Consume_Nothing_NeedsMore()
    {
        var parser = new ProxyHeaderParser();

        Assert.That(parser.Consume([]), Is.Zero);
        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.NeedMore));
    }

    [Test]
    public void Consume_EveryHeaderSplitAnywhere_GivesTheSameResult()
    {
        byte[][] headers =
        [
            Encoding.ASCII.GetBytes("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
            Encoding.ASCII.GetBytes("PROXY TCP6 2001:db8::1 2001:db8::2 1234 443\r\n"),
            Encoding.ASCII.GetBytes("PROXY UNKNOWN\r\n"),
            V2(0x21, 0x11, [10, 1, 2, 3, 192, 168, 0, 1, 0x13, 0x88, 0x01, 0xBB, 1, 0, 1, 7]),
            V2(0x20, 0x00, []),
        ];
        foreach (byte[] header in headers)
        {
            ProxyHeaderParser whole = ConsumeAll(header, out _);
            for (int first = 1; first < header.Length; first++)
            {
                for (int second = first; second < header.Length; second++)
                {
                    var parser = new ProxyHeaderParser();
                    byte[] withData = [.. header, .. "DATA"u8];
                    int taken = parser.Consume(withData.AsSpan(0, first));
                    taken += parser.Consume(withData.AsSpan(taken, second - taken + 1));
                    taken += parser.Consume(withData.AsSpan(taken));

                    Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Complete), $"split at {first}, {second}");
                    Assert.That(parser.Source, Is.EqualTo(whole.Source));
                    Assert.That(taken, Is.EqualTo(header.Length));
                }
            }
        }
    }

    [Test]
    public void Consume_MalformedSplitByteByByte_IsInvalid()
    {
        byte[] header = Encoding.ASCII.GetBytes("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n");
        var parser = new ProxyHeaderParser();

        foreach (byte b in header)
        {
            parser.Consume([b]);
        }

        Assert.That(parser.Status, Is.EqualTo(ProxyHeaderStatus.Invalid));
    }

    /// <summary>A v2 header: the signature, version and command, family and transport, the length, the body.</summary>
    internal static byte[] V2(byte versionAndCommand, byte family, byte[] body)
    {
        byte[] header = [.. s_v2Signature, versionAndCommand, family, 0, 0, .. body];
        BinaryPrimitives.WriteUInt16BigEndian(header.AsSpan(14), (ushort)body.Length);
        return header;
    }

    private static ProxyHeaderParser ConsumeAll(byte[] bytes, out int taken)
    {
        var parser = new ProxyHeaderParser();
        taken = parser.Consume(bytes);
        return parser;
    }
}
