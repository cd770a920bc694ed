using System.Net;
using PoolLib.Tests;
using SocketServers.Internal;

namespace SocketServers.Tests;

public sealed class EndpointRateLimiterTests
{
    private static readonly IPEndPoint s_sender = new(IPAddress.Parse("192.0.2.1"), 40000);

    [Test]
    public void Constructor_LimitBelowOne_ThrowsNamingIt()
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new EndpointRateLimiter(0));

        Assert.That(exception!.ParamName, Is.EqualTo("limitPerSecond"));
    }

    [Test]
    public void TryAcquire_OneSender_LetsThroughTheLimitPerSecondThenRefusesUntilTheNextSecond()
    {
        long now = 5_000;
        var limiter = new EndpointRateLimiter(10, new MillisecondClock(new Timestamps(() => now)), seed: 1);

        int first = CountLetThrough(limiter, s_sender, 25);
        now += 999;
        int laterInTheSecond = CountLetThrough(limiter, s_sender, 5);
        now += 1;
        int nextSecond = CountLetThrough(limiter, s_sender, 25);

        Assert.That((first, laterInTheSecond, nextSecond), Is.EqualTo((10, 0, 10)));
    }

    [Test]
    public void TryAcquire_SenderAtTheLimit_OtherPortsAndAddressesStillLetThrough()
    {
        var limiter = new EndpointRateLimiter(3, new MillisecondClock(new Timestamps(() => 0)), seed: 2);
        CountLetThrough(limiter, s_sender, 3);

        bool samePort = limiter.TryAcquire(new IPEndPoint(s_sender.Address, s_sender.Port));
        bool otherPort = limiter.TryAcquire(new IPEndPoint(s_sender.Address, s_sender.Port + 1));
        bool otherAddress = limiter.TryAcquire(new IPEndPoint(IPAddress.Parse("192.0.2.2"), s_sender.Port));
        bool ipv6 = limiter.TryAcquire(new IPEndPoint(IPAddress.Parse("2001:db8::1"), s_sender.Port));

        Assert.That((samePort, otherPort, otherAddress, ipv6), Is.EqualTo((false, true, true, true)));
    }

    // A flood from as many senders as the table has buckets, and more, fills every bucket; the table does not grow,
    // nothing is allocated, and the flooded sender among them still gets no more than its limit.
    [Test]
    public void TryAcquire_FloodOfDistinctSenders_AllocatesNothingAndTheLimitStillHolds()
    {
        const int Limit = 5;
        var limiter = new EndpointRateLimiter(Limit, new MillisecondClock(new Timestamps(() => 0)), seed: 3);
        var senders = new IPEndPoint[4 * EndpointRateLimiter.BucketCount];
        for (int i = 0; i < senders.Length; i++)
        {
            senders[i] = new IPEndPoint(new IPAddress([10, (byte)(i >> 16), (byte)(i >> 8), (byte)i]), 1024 + (i % 60000));
        }

        limiter.TryAcquire(s_sender);
        long before = GC.GetAllocatedBytesForCurrentThread();
        int letThrough = 0;
        for (int round = 0; round < 2 * Limit; round++)
        {
            foreach (IPEndPoint sender in senders)
            {
                limiter.TryAcquire(sender);
            }

            letThrough += limiter.TryAcquire(s_sender) ? 1 : 0;
        }

        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.That(allocated, Is.Zero);
        Assert.That(letThrough, Is.LessThanOrEqualTo(Limit - 1), "one was counted before the flood");
    }

    [Test]
    [CancelAfter(30_000)]
    public void TryAcquire_ManyThreadsOneSender_LetsThroughExactlyTheLimit()
    {
        const int Threads = 8;
        const int Limit = 1_000;
        const int Attempts = 10_000;
        var limiter = new EndpointRateLimiter(Limit, new MillisecondClock(new Timestamps(() => 0)), seed: 4);
        using var start = new Barrier(Threads);
        int letThrough = 0;

        TestThread[] threads = [.. Enumerable.Range(0, Threads).Select(_ => TestThread.Start(() =>
        {
            start.SignalAndWait();
            int mine = CountLetThrough(limiter, s_sender, Attempts);
            Interlocked.Add(ref letThrough, mine);
        }))];
        foreach (TestThread thread in threads)
        {
            Assert.That(thread.Join(TimeSpan.FromSeconds(20)), Is.True);
        }

        Assert.That(letThrough, Is.EqualTo(Limit));
    }

    private static int CountLetThrough(EndpointRateLimiter limiter, IPEndPoint sender, int attempts)
    {
        int letThrough = 0;
        for (int i = 0; i < attempts; i++)
        {
            letThrough += limiter.TryAcquire(sender) ? 1 : 0;
        }

        return letThrough;
    }
}
