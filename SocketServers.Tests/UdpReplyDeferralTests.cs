using System.Net.Sockets;
using SocketServers.Internal;

namespace SocketServers.Tests;

public sealed class UdpReplyDeferralTests
{
    [Test]
    [CancelAfter(60_000)]
    public void TryEnd_RacingAnotherEndAndTheLoopLettingGo_OneEndWinsAndTheArgsIsReleasedOnce(CancellationToken cancellationToken)
    {
        using var args = new PooledSocketArgs(new byte[16]);
        var owner = new CountingOwner();
        var deferral = new UdpReplyDeferral(args);
        int doubleWins = 0;
        for (int round = 1; round <= 5_000 && !cancellationToken.IsCancellationRequested; round++)
        {
            UdpDeferredReply reply = deferral.Defer(owner, null!, datagramLength: 4, bufferLength: 16);
            int token = deferral.Token;
            int wins = 0;
            Task.WaitAll(
                Task.Run(() => deferral.TakeDeferred()),
                Task.Run(() => wins += deferral.TryEnd(token, 0, failure: null) ? 1 : 0),
                Task.Run(reply.Dispose));

            // The loop's TakeDeferred and one of the two ends let go: the last of them released the args, once.
            doubleWins += wins > 1 ? 1 : 0;
            Assert.That(owner.Ended, Is.EqualTo(round), "each deferral counted once");
            Assert.That(owner.Released, Is.EqualTo(round), "each deferral released its args once");
            Assert.That(deferral.Token, Is.EqualTo(token + 1), "ended once");
        }

        Assert.That(doubleWins, Is.Zero);
    }

    [Test]
    public void Defer_TwiceForOneDatagram_Throws()
    {
        using var args = new PooledSocketArgs(new byte[16]);
        var deferral = new UdpReplyDeferral(args);
        deferral.Defer(new CountingOwner(), null!, datagramLength: 4, bufferLength: 16);

        Assert.Throws<InvalidOperationException>(() => deferral.Defer(new CountingOwner(), null!, datagramLength: 4, bufferLength: 16));
    }

    private sealed class CountingOwner : IUdpReplyOwner
    {
        private int _ended;
        private int _released;

        public int Ended => Volatile.Read(ref _ended);

        public int Released => Volatile.Read(ref _released);

        public void OnReplyDeferred()
        {
        }

        public Exception? SendReply(Socket socket, PooledSocketArgs args, int length) => throw new AssertionException("nothing to send");

        public void OnDeferredReplyEnded(PooledSocketArgs args, int length, Exception? failure) => Interlocked.Increment(ref _ended);

        public void Release(PooledSocketArgs args) => Interlocked.Increment(ref _released);
    }
}
