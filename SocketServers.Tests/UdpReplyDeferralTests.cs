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
        var deferral = new UdpReplyDeferral(args, owner);
        int doubleWins = 0;
        for (int round = 1; round <= 5_000 && !cancellationToken.IsCancellationRequested; round++)
        {
            deferral.Defer(null!, datagramLength: 4, bufferLength: 16);
            int token = deferral.Token;
            int wins = 0;
            Task.WaitAll(
                Task.Run(() => deferral.TakeDeferred()),
                Task.Run(() => Interlocked.Add(ref wins, deferral.TryEnd(token, UdpDatagramHandler.NoReply, failure: null) ? 1 : 0)),
                Task.Run(() => Interlocked.Add(ref wins, deferral.TryEnd(token, UdpDatagramHandler.NoReply, failure: null) ? 1 : 0)));

            // The loop's TakeDeferred and one of the two ends let go: the last of them released the args, once.
            doubleWins += wins == 1 ? 0 : 1;
            Assert.That(owner.Ended, Is.EqualTo(round), "each deferral counted once");
            Assert.That(owner.Released, Is.EqualTo(round), "each deferral released its args once");
            Assert.That(deferral.Token, Is.EqualTo(token + 1), "ended once");
        }

        Assert.That(doubleWins, Is.Zero);
    }

    [Test]
    public void TryEnd_WhileTheLoopStillHoldsTheArgs_ReleasedOnlyWhenTheLoopLetsGo()
    {
        using var args = new PooledSocketArgs(new byte[16]);
        var owner = new CountingOwner();
        var deferral = new UdpReplyDeferral(args, owner);
        deferral.Defer(null!, datagramLength: 4, bufferLength: 16);

        Assert.That(deferral.TryEnd(deferral.Token, UdpDatagramHandler.NoReply, failure: null), Is.True);
        Assert.That(owner.Released, Is.Zero, "the loop is still in the handler's call");
        Assert.That(deferral.TakeDeferred(), Is.True);
        Assert.That(owner.Released, Is.EqualTo(1));
    }

    [Test]
    public void TakeDeferred_BeforeTheReplyEnds_ReleasedOnlyWhenTheReplyEnds()
    {
        using var args = new PooledSocketArgs(new byte[16]);
        var owner = new CountingOwner();
        var deferral = new UdpReplyDeferral(args, owner);
        deferral.Defer(null!, datagramLength: 4, bufferLength: 16);

        Assert.That(deferral.TakeDeferred(), Is.True);
        Assert.That(owner.Released, Is.Zero, "the reply still holds it");
        Assert.That(deferral.TryEnd(deferral.Token, UdpDatagramHandler.NoReply, failure: null), Is.True);
        Assert.That(owner.Released, Is.EqualTo(1));
        Assert.That(deferral.TakeDeferred(), Is.False, "nothing deferred any more");
    }

    [Test]
    public void Defer_TwiceForOneDatagram_Throws()
    {
        using var args = new PooledSocketArgs(new byte[16]);
        var deferral = new UdpReplyDeferral(args, new CountingOwner());
        deferral.Defer(null!, datagramLength: 4, bufferLength: 16);

        Assert.Throws<InvalidOperationException>(() => deferral.Defer(null!, datagramLength: 4, bufferLength: 16));
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

        public void CountDeferredReply(PooledSocketArgs args, int length, Exception? failure) => Interlocked.Increment(ref _ended);

        public void Release(PooledSocketArgs args) => Interlocked.Increment(ref _released);

        public void OnDeferredReplyEnded()
        {
        }
    }
}
