using System.Net;
using System.Net.Sockets;
using static SocketServers.Tests.TcpEchoTesting;

namespace SocketServers.Tests;

// Start, stop before start, and dispose: the lifecycle a host relies on.
public sealed partial class TcpEchoServerTests
{
    [Test]
    public void Constructor_NullOptions_ThrowsArgumentNull()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => _ = new TcpEchoServer(null!));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_PortZero_ListensOnRealPort(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);

        Assert.That(server.LocalEndPoint, Is.Not.Null);
        Assert.That(server.LocalEndPoint!.Address, Is.EqualTo(IPAddress.Loopback));
        Assert.That(server.LocalEndPoint.Port, Is.Not.Zero);
        Assert.That(server.IsRunning, Is.True);
        await SocketTestExtensions.AssertEchoesAsync(server.LocalEndPoint, 100, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_Twice_ThrowsInvalidOperation(CancellationToken cancellationToken)
    {
        await using var server = await StartAsync(cancellationToken: cancellationToken);

        await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync(cancellationToken));
        Assert.That(server.IsRunning, Is.True);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_PortInUse_ThrowsIOExceptionSayingInUse(CancellationToken cancellationToken)
    {
        await using var first = await StartAsync(cancellationToken: cancellationToken);
        await using var second = new TcpEchoServer(new TcpEchoServerOptions { Port = first.LocalEndPoint!.Port });

        var exception = await Assert.ThrowsAsync<IOException>(() => second.StartAsync(cancellationToken));

        Assert.That(exception!.Message, Does.Contain("already in use").And.Contain(first.LocalEndPoint.ToString()));
        Assert.That(exception.InnerException, Is.InstanceOf<SocketException>()
            .With.Property(nameof(SocketException.SocketErrorCode)).EqualTo(SocketError.AddressAlreadyInUse));
        Assert.That(second.IsRunning, Is.False);
        await SocketTestExtensions.AssertEchoesAsync(first.LocalEndPoint, 10, cancellationToken);
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StartAsync_AfterDispose_ThrowsObjectDisposed(CancellationToken cancellationToken)
    {
        var server = new TcpEchoServer(LoopbackOptions());
        await server.DisposeAsync();

        await Assert.ThrowsAsync<ObjectDisposedException>(() => server.StartAsync(cancellationToken));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task StopAsync_BeforeStart_DoesNothingAndStartThenThrows(CancellationToken cancellationToken)
    {
        await using var server = new TcpEchoServer(LoopbackOptions());

        await server.StopAsync(cancellationToken);

        Assert.That(server.LocalEndPoint, Is.Null);
        await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartAsync(cancellationToken));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task DisposeAsync_Running_StopsListening(CancellationToken cancellationToken)
    {
        var server = await StartAsync(cancellationToken: cancellationToken);
        IPEndPoint endPoint = server.LocalEndPoint!;

        await server.DisposeAsync();
        await server.DisposeAsync();

        Assert.That(server.IsRunning, Is.False);
        await Assert.ThrowsAsync<SocketException>(async () => (await SocketTestExtensions.ConnectTcpAsync(endPoint, cancellationToken)).Dispose());
    }
}
