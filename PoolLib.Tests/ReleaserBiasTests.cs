using PoolLib.Internal;

namespace PoolLib.Tests;

// Thread ids are passed in, so the claim and revoke rules are checked with made-up ids on one
// thread; only the wait for an owner inside its bracket needs a second thread.
public sealed class ReleaserBiasTests
{
    private const int Owner = 7;
    private const int Other = 8;

    private static readonly TimeSpan s_waitBound = TimeSpan.FromSeconds(20);

    [Test]
    public void TryEnter_FirstReleaser_ClaimsTheBiasAndKeepsIt()
    {
        var bias = new ReleaserBias();

        for (int i = 0; i < 3; i++)
        {
            Assert.That(bias.TryEnter(Owner), Is.True);
            bias.Exit();
        }

        Assert.That(bias.IsRevoked, Is.False);
    }

    [Test]
    public void TryEnter_AnotherThreadReleases_RevokesForEveryoneForGood()
    {
        var bias = new ReleaserBias();
        bias.TryEnter(Owner);
        bias.Exit();

        Assert.That(bias.TryEnter(Other), Is.False);

        Assert.That(bias.IsRevoked, Is.True);
        Assert.That(bias.TryEnter(Owner), Is.False);
        Assert.That(bias.TryEnter(Other), Is.False);
        Assert.That(bias.TryEnter(Other + 1), Is.False);
    }

    [Test]
    public void TryEnter_AnotherThreadWhileOwnerIsInside_ReturnsOnlyAfterTheOwnerExits()
    {
        var bias = new ReleaserBias();
        Assert.That(bias.TryEnter(Owner), Is.True);
        bool? revokerEntered = null;
        var revoker = new Thread(() => revokerEntered = bias.TryEnter(Other)) { IsBackground = true };

        revoker.Start();

        // A revoker that stopped waiting for the bracket would be done well within this; a correct
        // one cannot be, whatever the scheduling, since the bracket is still open.
        Assert.That(revoker.Join(TimeSpan.FromMilliseconds(200)), Is.False);
        Assert.That(bias.IsRevoked, Is.False);
        bias.Exit();
        Assert.That(revoker.Join(s_waitBound), Is.True);
        Assert.That(revokerEntered, Is.False);
        Assert.That(bias.IsRevoked, Is.True);
        Assert.That(bias.TryEnter(Owner), Is.False);
    }

    [Test]
    public void TryEnter_OwnerWhileARevokerWaitsForItsBracket_ReturnsFalseAtOnce()
    {
        var bias = new ReleaserBias();
        Assert.That(bias.TryEnter(Owner), Is.True);
        var revoker = new Thread(() => bias.TryEnter(Other)) { IsBackground = true };
        revoker.Start();

        // The owner's next release, made here on another thread with the owner's id so that a wait
        // for the bracket still open fails the join instead of hanging the test: it must neither
        // enter nor wait.
        bool? enteredWhileRevoking = null;
        var sameId = new Thread(() => enteredWhileRevoking = bias.TryEnter(Owner)) { IsBackground = true };
        Assert.That(SpinWait.SpinUntil(() => !bias.IsBiased, s_waitBound), Is.True);
        Assert.That(bias.IsRevoked, Is.False);
        sameId.Start();
        bool sameIdReturned = sameId.Join(s_waitBound);
        bias.Exit();

        Assert.That(sameIdReturned, Is.True);
        Assert.That(enteredWhileRevoking, Is.False);
        Assert.That(revoker.Join(s_waitBound), Is.True);
    }

    [Test]
    public void TryEnter_ClaimedByOneOfManyRacingThreads_AllOthersRevoke()
    {
        const int Threads = 4;
        var bias = new ReleaserBias();
        using var start = new Barrier(Threads);
        var entered = new bool[Threads];
        Thread[] racers = Enumerable.Range(0, Threads).Select(i => new Thread(() =>
        {
            start.SignalAndWait();
            entered[i] = bias.TryEnter(100 + i);
            if (entered[i])
            {
                bias.Exit();
            }
        }) { IsBackground = true }).ToArray();

        foreach (Thread racer in racers)
        {
            racer.Start();
        }

        Assert.That(racers.All(r => r.Join(s_waitBound)), Is.True);
        Assert.That(entered.Count(e => e), Is.LessThanOrEqualTo(1));
        Assert.That(bias.IsRevoked, Is.True);
    }
}
