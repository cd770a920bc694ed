using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using System.Text;

namespace SocketServers.Tests;

// A stop meets a TLS connection as it meets a plain one: the loop that waits on the TLS stream is woken.
public sealed partial class TcpServerTests
{
    // The stop wakes a loop that waits on the TLS stream holding part of a message: the handler's unfinished-input word
    // reaches the client over TLS, the stream ends, and the drain completes with the connection's slot back.
    [Test]
    [CancelAfter(30_000)]
    public async Task StopAsync_TlsMessageHalfSent_HandlerHasItsLastWordThenStreamEndsAndTheSlotComesBack(CancellationToken cancellationToken)
    {
        using X509Certificate2 certificate = TestCertificates.Create();
        var handler = new ScriptedHandler();
        await using var server = await StartAsync(handler, options => options.Tls.ServerCertificate = certificate, cancellationToken);
        using Socket socket = await SocketTestExtensions.ConnectTcpAsync(server.LocalEndPoint!, cancellationToken);
        await using var client = new SslStream(new NetworkStream(socket), leaveInnerStreamOpen: true);
        await client.AuthenticateAsClientAsync(
            new SslClientAuthenticationOptions
            {
                TargetHost = "localhost",
                RemoteCertificateValidationCallback = (_, served, _, _) => served?.GetCertHashString() == certificate.GetCertHashString(),
            },
            cancellationToken);
        await client.WriteAsync("whole\nhal"u8.ToArray(), cancellationToken);
        byte[] whole = new byte[6];
        await client.ReadExactlyAsync(whole, cancellationToken);
        await handler.PartialSeen.Task.WaitAsync(cancellationToken);

        Task stop = server.StopAsync(cancellationToken);
        string rest = await ReadToEndAsync(client, cancellationToken);
        socket.Shutdown(SocketShutdown.Send);
        await stop;

        Assert.That(Encoding.ASCII.GetString(whole), Is.EqualTo("WHOLE\n"));
        Assert.That(rest, Is.EqualTo("unfinished: hal\n"));
        Assert.That(server.StopCutShort, Is.False, "the drain completed: every slot came back");
        Assert.That(server.Counters.CurrentConnections, Is.Zero);
        Assert.That(server.BuffersInUse, Is.Zero);
    }

    /// <summary>The plaintext the server sends until its end of stream.</summary>
    private static async Task<string> ReadToEndAsync(SslStream client, CancellationToken cancellationToken)
    {
        using var received = new MemoryStream();
        await client.CopyToAsync(received, cancellationToken);
        return Encoding.ASCII.GetString(received.ToArray());
    }
}
