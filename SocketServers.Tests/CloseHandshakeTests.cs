using SocketServers.Internal;

namespace SocketServers.Tests;

// The handshake between a connection's loop and a thread asking it to end its stream, raced many times: the stream is
// ended exactly once, and a loop waiting with part of a message is woken or sees the request itself.
public sealed class CloseHandshakeTests
{
    private const int Rounds = 10_000;

    [Test]
    [CancelAfter(60_000)]
    public void RequestEnd_RacingTheLoopsWait_StreamEndedExactlyOnce(CancellationToken cancellationToken)
    {
        int twice = 0;
        int never = 0;
        for (int round = 0; round < Rounds; round++)
        {
            var handshake = new CloseHandshake();
            bool loopEnded = false;
            bool requesterEnded = false;
            Race(
                () =>
                {
                    // One wait owing nothing, as the loop's, then back to handling if the request did not end it.
                    if (handshake.EnterWaiting(out loopEnded))
                    {
                        _ = handshake.LeaveWaiting();
                    }
                },
                () => requesterEnded = handshake.RequestEnd(CloseRequest.HandlerClose),
                cancellationToken);

            // The loop's next wait, the request now seen: it ends the stream unless someone has.
            if (!loopEnded && !requesterEnded && !handshake.EnterWaiting(out bool endedLater))
            {
                loopEnded = endedLater;
            }

            twice += loopEnded && requesterEnded ? 1 : 0;
            never += loopEnded || requesterEnded ? 0 : 1;
        }

        Assert.That((twice, never), Is.EqualTo((0, 0)));
    }

    [Test]
    [CancelAfter(60_000)]
    public void RequestEnd_RacingAWaitHoldingPartOfAMessage_WaitWokenOrNotBegun(CancellationToken cancellationToken)
    {
        int missed = 0;
        for (int round = 0; round < Rounds; round++)
        {
            var handshake = new CloseHandshake();
            bool waited = false;
            CancellationToken requested = default;
            bool requesterEnded = true;
            Race(
                () => waited = handshake.BeginPartialWait(out requested),
                () => requesterEnded = handshake.RequestEnd(CloseRequest.Stop),
                cancellationToken);

            missed += requesterEnded || (waited && !requested.IsCancellationRequested) ? 1 : 0;
        }

        Assert.That(missed, Is.Zero, "the requester never ends the stream of a loop holding part of a message, and a wait begun is woken");
    }

    [Test]
    public void TryRequestIdleClose_AfterTheHandlersClose_OverridesIt()
    {
        var handshake = new CloseHandshake();
        handshake.RequestEnd(CloseRequest.HandlerClose);

        Assert.That(handshake.TryRequestIdleClose(), Is.True);
        Assert.That(handshake.Request, Is.EqualTo(CloseRequest.IdleClose));
        Assert.That(handshake.TryRequest(CloseRequest.Evicted), Is.False);
    }

    /// <summary>Runs <paramref name="loop"/> and <paramref name="requester"/> on two threads released together.</summary>
    private static void Race(Action loop, Action requester, CancellationToken cancellationToken)
    {
        using var start = new Barrier(2);
        var other = new Thread(() =>
        {
            start.SignalAndWait(cancellationToken);
            requester();
        });
        other.Start();
        start.SignalAndWait(cancellationToken);
        loop();
        Assert.That(other.Join(TimeSpan.FromSeconds(10)), Is.True);
    }
}
