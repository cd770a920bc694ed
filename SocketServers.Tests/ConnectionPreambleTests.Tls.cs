using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using PoolLib.Tests;

namespace SocketServers.Tests;

public sealed partial class ConnectionPreambleTests
{
    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_Handshake_ServesTheCertificateAndRecordsTheVersion(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        await using TcpServer server = await StartTlsAsync(certificate, configure: null, cancellationToken);
        using MeterReader meter = MeterReader.ForServer(server.LocalEndPoint!.Port);

        string thumbprint = await HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken);

        Assert.That(thumbprint, Is.EqualTo(certificate.Thumbprint));
        await Poll.UntilAsync(() => meter.Recorded("socketservers.tls.handshake.duration").Any(m => m.Tags.ContainsKey("tls.protocol.version")), cancellationToken);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_AfterProxyHeader_HandshakeCompletes(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        await using TcpServer server = await StartAsync(
            options =>
            {
                options.ProxyProtocolNetworks.Add(s_loopback);
                options.Tls.ServerCertificate = certificate;
            },
            cancellationToken);

        string thumbprint = await HandshakeAsync(server.LocalEndPoint!, Encoding.ASCII.GetBytes("PROXY TCP4 203.0.113.7 127.0.0.1 5555 7\r\n"), cancellationToken);

        Assert.That(thumbprint, Is.EqualTo(certificate.Thumbprint));
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_SilentClient_ClosedAtTheHandshakeTimeout(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        await using TcpServer server = await StartTlsAsync(certificate, options => options.HandshakeTimeout = TimeSpan.FromMilliseconds(200), cancellationToken);
        using MeterReader meter = MeterReader.ForServer(server.LocalEndPoint!.Port);
        using Socket client = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);

        Assert.That(await client.ReadEndAsync(cancellationToken), Is.Zero);
        await Poll.UntilAsync(() => Failures(meter, "tls", "timeout") == 1, cancellationToken);
        Assert.That(server.Counters.TotalConnections, Is.Zero);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_ClientCertificateRequiredAndMissing_HandshakeFails(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        await using TcpServer server = await StartTlsAsync(certificate, options => options.Tls.ClientCertificateMode = ClientCertificateMode.RequireCertificate, cancellationToken);
        using MeterReader meter = MeterReader.ForServer(server.LocalEndPoint!.Port);

        // TLS 1.3 lets the client finish before the server has refused it: the refusal shows in the server's count.
        try
        {
            await HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken);
        }
        catch (Exception ex) when (ex is AuthenticationException or IOException)
        {
        }

        await Poll.UntilAsync(() => Failures(meter, "tls", "protocol") == 1, cancellationToken);
        Assert.That(server.Counters.TotalConnections, Is.Zero);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_CertificateFilesReplaced_NewConnectionGetsTheNewCertificate(CancellationToken cancellationToken)
    {
        string folder = Directory.CreateTempSubdirectory("socketservers-tls-").FullName;
        try
        {
            string certificatePath = Path.Combine(folder, "server.crt");
            string keyPath = Path.Combine(folder, "server.key");
            using X509Certificate2 first = TestCertificates.Create();
            using X509Certificate2 second = TestCertificates.Create();
            TestCertificates.WritePem(first, certificatePath, keyPath);
            await using TcpServer server = await StartAsync(
                options =>
                {
                    options.Tls.CertificatePath = certificatePath;
                    options.Tls.KeyPath = keyPath;
                },
                cancellationToken);
            Assert.That(await HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken), Is.EqualTo(first.Thumbprint));
            var reloaded = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
            server.Preamble!.Tls!.Files!.Reloaded += certificate => reloaded.TrySetResult(certificate.Thumbprint);

            TestCertificates.WritePem(second, certificatePath, keyPath);

            Assert.That(await reloaded.Task.WaitAsync(cancellationToken), Is.EqualTo(second.Thumbprint));
            Assert.That(await HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken), Is.EqualTo(second.Thumbprint));
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }

    // A Kubernetes secret volume: the files link through ..data, which an update renames to point at a new folder.
    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_CertificateLinksSwappedAsKubernetesDoes_NewConnectionGetsTheNewCertificate(CancellationToken cancellationToken)
    {
        if (!OperatingSystem.IsLinux())
        {
            Assert.Ignore("The link is swapped with GNU mv -T, as Kubernetes does on Linux.");
        }

        string folder = Directory.CreateTempSubdirectory("socketservers-tls-").FullName;
        try
        {
            using X509Certificate2 first = TestCertificates.Create();
            using X509Certificate2 second = TestCertificates.Create();
            WriteVersion(folder, "..v1", first);
            Directory.CreateSymbolicLink(Path.Combine(folder, "..data"), "..v1");
            File.CreateSymbolicLink(Path.Combine(folder, "tls.crt"), Path.Combine("..data", "tls.crt"));
            File.CreateSymbolicLink(Path.Combine(folder, "tls.key"), Path.Combine("..data", "tls.key"));
            await using TcpServer server = await StartAsync(
                options =>
                {
                    options.Tls.CertificatePath = Path.Combine(folder, "tls.crt");
                    options.Tls.KeyPath = Path.Combine(folder, "tls.key");
                },
                cancellationToken);
            Assert.That(await HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken), Is.EqualTo(first.Thumbprint));
            var reloaded = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
            server.Preamble!.Tls!.Files!.Reloaded += certificate => reloaded.TrySetResult(certificate.Thumbprint);

            WriteVersion(folder, "..v2", second);
            Directory.CreateSymbolicLink(Path.Combine(folder, "..data_tmp"), "..v2");
            using (var swap = System.Diagnostics.Process.Start("mv", ["-T", Path.Combine(folder, "..data_tmp"), Path.Combine(folder, "..data")]))
            {
                await swap.WaitForExitAsync(cancellationToken);
                Assert.That(swap.ExitCode, Is.Zero);
            }

            Assert.That(await reloaded.Task.WaitAsync(cancellationToken), Is.EqualTo(second.Thumbprint));
            Assert.That(await HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken), Is.EqualTo(second.Thumbprint));
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }

        static void WriteVersion(string folder, string version, X509Certificate2 certificate)
        {
            string path = Directory.CreateDirectory(Path.Combine(folder, version)).FullName;
            TestCertificates.WritePem(certificate, Path.Combine(path, "tls.crt"), Path.Combine(path, "tls.key"));
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_OverTheHandshakeCap_WaitsUnacceptedUntilOneEnds(CancellationToken cancellationToken)
    {
        if (!OperatingSystem.IsLinux())
        {
            Assert.Ignore("The listen backlog's length is read on Linux alone.");
        }

        using X509Certificate2 certificate = TestCertificates.Create();
        await using TcpServer server = await StartTlsAsync(certificate, options => options.Tls.MaxHandshakesInFlight = 1, cancellationToken);
        Socket silent = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Preamble!.HandshakesInFlight == 1, cancellationToken);

        Task<string> waiting = HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken);
        await Poll.UntilAsync(() => server.QueuedConnections == 1, cancellationToken);
        Assert.That(server.Preamble!.HandshakesInFlight, Is.EqualTo(1));
        Assert.That(waiting.IsCompleted, Is.False);

        silent.Dispose();

        Assert.That(await waiting, Is.EqualTo(certificate.Thumbprint));
        Assert.That(server.QueuedConnections, Is.Zero);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Stop_HandshakeUnderWay_ClosesItAndStops(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        TcpServer server = await StartTlsAsync(certificate, configure: null, cancellationToken);
        using Socket silent = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Preamble!.HandshakesInFlight == 1, cancellationToken);

        await server.DisposeAsync();

        Assert.That(await silent.ReadEndAsync(cancellationToken), Is.Zero);
        Assert.That(server.StopCutShort, Is.False);
    }

    // Without counting the handshake's slot, the server looked one short of full and evicted nobody.
    [Test]
    [CancelAfter(30_000)]
    public async Task Tls_FullWithAHandshakeAndASlowConnection_EvictsTheSlowOneForAWaitingClient(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        await using TcpServer server = await StartTlsAsync(
            certificate,
            options =>
            {
                options.MaxConnections = 2;
                options.SlowConnectionWindow = TimeSpan.FromMilliseconds(100);
            },
            cancellationToken);
        using SslStream slow = await ConnectTlsAsync(server.LocalEndPoint!, prefix: null, cancellationToken);
        using Socket silent = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await Poll.UntilAsync(() => server.Preamble!.Running == 1 && server.Counters.CurrentConnections == 1, cancellationToken);

        Task<string> waiting = HandshakeAsync(server.LocalEndPoint!, prefix: null, cancellationToken);

        await Poll.UntilAsync(() => server.Counters.Evicted == 1, cancellationToken);
        Assert.That(await waiting, Is.EqualTo(certificate.Thumbprint));
    }

    [TestCase(true, TestName = "Start_CertificateFileMissing_ThrowsNamingIt")]
    [TestCase(false, TestName = "Start_KeyFileNotTheCertificates_ThrowsNamingIt")]
    [CancelAfter(30_000)]
    public async Task Start_CertificateFilesDoNotLoad_ThrowsNamingTheFile(bool missing, CancellationToken cancellationToken)
    {
        string folder = Directory.CreateTempSubdirectory("socketservers-tls-").FullName;
        try
        {
            string certificatePath = Path.Combine(folder, "server.crt");
            string keyPath = Path.Combine(folder, "server.key");
            using X509Certificate2 certificate = TestCertificates.Create();
            using X509Certificate2 other = TestCertificates.Create();
            if (!missing)
            {
                TestCertificates.WritePem(certificate, certificatePath, keyPath);
                TestCertificates.WritePem(other, Path.Combine(folder, "other.crt"), keyPath);
            }

            var options = new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 };
            options.Tls.CertificatePath = certificatePath;
            options.Tls.KeyPath = keyPath;
            var server = new TcpServer(options, new AddressEchoHandler());

            var thrown = await Assert.ThrowsAsync<InvalidOperationException>(() => Started.StartAsync(server, cancellationToken));
            Assert.That(thrown!.Message, Does.Contain(missing ? certificatePath : keyPath).And.Not.Contain("\n"));
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }

    private static Task<TcpServer> StartTlsAsync(X509Certificate2 certificate, Action<TcpServerOptions>? configure, CancellationToken cancellationToken)
        => StartAsync(
            options =>
            {
                options.Tls.ServerCertificate = certificate;
                configure?.Invoke(options);
            },
            cancellationToken);

    /// <summary>Connects, sends <paramref name="prefix"/> if any, and runs a client handshake that accepts any certificate.</summary>
    /// <returns>The server certificate's thumbprint.</returns>
    private static async Task<string> HandshakeAsync(IPEndPoint server, byte[]? prefix, CancellationToken cancellationToken)
    {
        await using SslStream tls = await ConnectTlsAsync(server, prefix, cancellationToken);
        return tls.RemoteCertificate!.GetCertHashString();
    }

    /// <summary>Connects, sends <paramref name="prefix"/> if any, and runs a client handshake that accepts any certificate.</summary>
    /// <returns>The authenticated stream, which owns the socket.</returns>
    private static async Task<SslStream> ConnectTlsAsync(IPEndPoint server, byte[]? prefix, CancellationToken cancellationToken)
    {
        Socket client = await SocketTestExtensions.ConnectTcpAsync(server, cancellationToken);
        if (prefix is not null)
        {
            await client.SendAllAsync(prefix, cancellationToken);
        }

        var tls = new SslStream(new NetworkStream(client, ownsSocket: true));
        try
        {
            await tls.AuthenticateAsClientAsync(
                new SslClientAuthenticationOptions { TargetHost = "localhost", RemoteCertificateValidationCallback = (_, _, _, _) => true },
                cancellationToken);
            return tls;
        }
        catch
        {
            await tls.DisposeAsync();
            throw;
        }
    }
}
