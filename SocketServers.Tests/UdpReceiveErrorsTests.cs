using System.Net.Sockets;
using SocketServers.Internal;

namespace SocketServers.Tests;

// What a UDP receive loop does after a receive that failed. A socket error the loop does not expect ends the loop as
// an unexpected exception does, which the server logs, meters by its socket error and follows with a pause before it
// starts the loop again (UdpEchoServerTests: ReceiveLoop_FirstReceivesThrow and StopAsync_ReceiveLoopsPausedAfterFaults):
// retried at once, a receive that keeps failing would be a busy loop.
public sealed class UdpReceiveErrorsTests
{
    [TestCase(SocketError.NoBufferSpaceAvailable)]
    [TestCase(SocketError.AddressNotAvailable)]
    [TestCase(SocketError.Fault)]
    public void GoesOn_UnexpectedErrorWhileRunning_ThrowsItsSocketErrorForTheLoopsPause(SocketError error)
    {
        var thrown = Assert.Throws<SocketException>(() => UdpReceiveErrors.GoesOn(error, stopping: false));

        Assert.That(thrown!.SocketErrorCode, Is.EqualTo(error));
        Assert.That(SocketServerMetrics.ErrorType(thrown), Is.EqualTo(error.ToString()), "the error.type the loop's failure is metered with");
    }

    [TestCase(SocketError.NoBufferSpaceAvailable)]
    [TestCase(SocketError.OperationAborted)]
    public void GoesOn_AnyErrorWhileStopping_EndsTheLoop(SocketError error)
        => Assert.That(UdpReceiveErrors.GoesOn(error, stopping: true), Is.False);

    [Test]
    public void GoesOn_SocketClosed_EndsTheLoop()
        => Assert.That(UdpReceiveErrors.GoesOn(SocketError.OperationAborted, stopping: false), Is.False);

    [TestCase(SocketError.Success)]
    [TestCase(SocketError.MessageSize)]
    public void GoesOn_DatagramTooLarge_ReceivesAgainAfterTheDrop(SocketError error)
    {
        Assert.That(UdpReceiveErrors.IsTooLarge(error), Is.True);
        Assert.That(UdpReceiveErrors.GoesOn(error, stopping: false), Is.True);
    }

    [TestCase(SocketError.ConnectionReset)]
    [TestCase(SocketError.ConnectionRefused)]
    [TestCase(SocketError.HostUnreachable)]
    [TestCase(SocketError.NetworkUnreachable)]
    [TestCase(SocketError.NetworkReset)]
    [TestCase(SocketError.HostDown)]
    public void GoesOn_ReportAboutAnEarlierReply_ReceivesAgainAtOnce(SocketError error)
    {
        Assert.That(UdpReceiveErrors.ReportsEarlierReply(error), Is.True);
        Assert.That(UdpReceiveErrors.GoesOn(error, stopping: false), Is.True);
    }
}
