using System.Text;
using Microsoft.Extensions.Time.Testing;
using SocketServers.Resp;

namespace SocketServers.Tests;

// The RESP sample's store on a fake clock: expiry when touched and by the sweep, SET's conditions, and the memory limit.
public sealed class RespStoreTests
{
    private static readonly byte[] s_value = "value"u8.ToArray();

    [Test]
    public void Get_KeyPastItsExpiry_GoneAndItsMemoryReturned()
    {
        var time = new FakeTimeProvider();
        using var store = new RespStore(time, maxMemory: 0);
        store.Set("k"u8, s_value, expiresAt: store.Now + 100);
        time.Advance(TimeSpan.FromMilliseconds(99));
        int before = store.CopyTo("k"u8, new byte[16]);

        time.Advance(TimeSpan.FromMilliseconds(1));

        Assert.That(before, Is.EqualTo(s_value.Length));
        Assert.That(store.CopyTo("k"u8, new byte[16]), Is.EqualTo(-1));
        Assert.That((store.Count, store.UsedMemory), Is.EqualTo((0, 0L)));
    }

    // Redis's active expiry: keys nobody touches go too, on the clock's timer.
    [Test]
    public void Sweep_ExpiredKeysNobodyTouches_RemovedOnTheTimer()
    {
        var time = new FakeTimeProvider();
        using var store = new RespStore(time, maxMemory: 0);
        store.Set("lasting"u8, s_value);
        store.Set("later"u8, s_value, expiresAt: store.Now + 1_000);
        for (int i = 0; i < 100; i++)
        {
            store.Set(Key(i), s_value, expiresAt: store.Now + 50);
        }

        time.Advance(RespStore.SweepInterval);

        Assert.That(store.Count, Is.EqualTo(2));
        Assert.That(store.UsedMemory, Is.EqualTo(2 * (RespStore.EntryOverhead + 5 + s_value.Length) + 2));
    }

    [Test]
    public void Sweep_MoreExpiredKeysThanATickLooksAt_BoundedPerTickAndAllGoneInTheEnd()
    {
        const int Keys = 3 * RespStore.SweepBatch * RespStore.SweepBatchesPerTick;
        var time = new FakeTimeProvider();
        using var store = new RespStore(time, maxMemory: 0);
        for (int i = 0; i < Keys; i++)
        {
            store.Set(Key(i), s_value, expiresAt: store.Now + 1);
        }

        time.Advance(RespStore.SweepInterval);
        int afterOneTick = store.Count;
        for (int tick = 0; tick < 3; tick++)
        {
            time.Advance(RespStore.SweepInterval);
        }

        Assert.That(afterOneTick, Is.EqualTo(Keys - (RespStore.SweepBatch * RespStore.SweepBatchesPerTick)));
        Assert.That((store.Count, store.UsedMemory), Is.EqualTo((0, 0L)));
    }

    [Test]
    public void Set_WithoutKeepExpiry_ClearsTheExpiryAndKeepExpiryKeepsIt()
    {
        var time = new FakeTimeProvider();
        using var store = new RespStore(time, maxMemory: 0);
        store.Set("a"u8, s_value, expiresAt: store.Now + 5_000);
        store.Set("b"u8, s_value, expiresAt: store.Now + 5_000);

        store.Set("a"u8, s_value);
        store.Set("b"u8, s_value, expiresAt: RespStore.KeepExpiry);
        time.Advance(TimeSpan.FromSeconds(1));

        Assert.That(store.TimeToLive("a"u8), Is.EqualTo(-1));
        Assert.That(store.TimeToLive("b"u8), Is.EqualTo(4_000));
        Assert.That(store.TimeToLive("missing"u8), Is.EqualTo(-2));
    }

    [Test]
    public void Set_Conditions_SetOnlyWhenTheyHold()
    {
        using var store = new RespStore(new FakeTimeProvider(), maxMemory: 0);

        RespStore.SetOutcome[] outcomes =
        [
            store.Set("k"u8, "1"u8, RespStore.SetCondition.IfPresent),
            store.Set("k"u8, "2"u8, RespStore.SetCondition.IfAbsent),
            store.Set("k"u8, "3"u8, RespStore.SetCondition.IfAbsent),
            store.Set("k"u8, "4"u8, RespStore.SetCondition.IfPresent),
        ];
        byte[] value = new byte[1];
        store.CopyTo("k"u8, value);

        Assert.That(outcomes, Is.EqualTo(new[] { RespStore.SetOutcome.NotSet, RespStore.SetOutcome.Done, RespStore.SetOutcome.NotSet, RespStore.SetOutcome.Done }));
        Assert.That(value, Is.EqualTo("4"u8.ToArray()));
    }

    [Test]
    public void Remove_ExpiredKey_NotCountedAsRemoved()
    {
        var time = new FakeTimeProvider();
        using var store = new RespStore(time, maxMemory: 0);
        store.Set("k"u8, s_value, expiresAt: store.Now + 10);
        time.Advance(TimeSpan.FromMilliseconds(10));

        Assert.That(store.Remove("k"u8), Is.False);
        Assert.That(store.UsedMemory, Is.Zero);
    }

    // A million SETs of new keys from four threads at once: the accounting never passes the limit, matches the keys
    // kept, and every SET past the limit is refused. The limit is reserved lock-free (a compare-and-swap loop).
    [Test]
    [CancelAfter(60_000)]
    public void Set_MillionNewKeysFromFourThreadsUnderALimit_UsedMemoryHeldAndExact()
    {
        const int Threads = 4;
        const int SetsPerThread = 250_000;
        const long Limit = 1 << 20;
        using var store = new RespStore(new FakeTimeProvider(), Limit);
        byte[] value = new byte[100];
        long highest = 0;
        int refused = 0;
        using var start = new Barrier(Threads);

        var threads = Enumerable.Range(0, Threads).Select(t => new Thread(() =>
        {
            start.SignalAndWait();
            for (int i = 0; i < SetsPerThread; i++)
            {
                if (store.Set(Key((t * SetsPerThread) + i), value) == RespStore.SetOutcome.OutOfMemory)
                {
                    Interlocked.Increment(ref refused);
                }

                long used = store.UsedMemory;
                long seen;
                while (used > (seen = Volatile.Read(ref highest)) && Interlocked.CompareExchange(ref highest, used, seen) != seen)
                {
                }
            }
        })).ToList();
        threads.ForEach(thread => thread.Start());
        threads.ForEach(thread => Assert.That(thread.Join(TimeSpan.FromSeconds(50)), Is.True));

        long perKey = RespStore.EntryOverhead + Key(0).Length + value.Length;
        Assert.That(highest, Is.LessThanOrEqualTo(Limit));
        Assert.That(store.UsedMemory, Is.EqualTo(store.Count * perKey));
        Assert.That(store.Count, Is.EqualTo(Limit / perKey));
        Assert.That(refused, Is.EqualTo((Threads * SetsPerThread) - store.Count));
    }

    [Test]
    public void Set_LongerValueOverTheLimit_RefusedAndTheOldValueKept()
    {
        long limit = RespStore.EntryOverhead + 1 + 10;
        using var store = new RespStore(new FakeTimeProvider(), limit);
        store.Set("k"u8, new byte[10]);

        RespStore.SetOutcome longer = store.Set("k"u8, new byte[11]);
        RespStore.SetOutcome shorter = store.Set("k"u8, new byte[3]);
        RespStore.SetOutcome another = store.Set("j"u8, []);
        RespStore.IncrementOutcome counter = store.Increment("n"u8, out _);

        Assert.That((longer, shorter, another, counter), Is.EqualTo((RespStore.SetOutcome.OutOfMemory, RespStore.SetOutcome.Done, RespStore.SetOutcome.OutOfMemory, RespStore.IncrementOutcome.OutOfMemory)));
        Assert.That(store.UsedMemory, Is.EqualTo(limit));
    }

    [Test]
    public void Remove_EveryKey_UsedMemoryBackToZero()
    {
        using var store = new RespStore(new FakeTimeProvider(), maxMemory: 0);
        for (int i = 0; i < 1000; i++)
        {
            store.Set(Key(i), s_value);
            store.Increment(Key(-i - 1), out _);
        }

        for (int i = 0; i < 1000; i++)
        {
            Assert.That(store.Remove(Key(i)) && store.Remove(Key(-i - 1)), Is.True);
        }

        Assert.That((store.Count, store.UsedMemory), Is.EqualTo((0, 0L)));
    }

    private static byte[] Key(int i) => Encoding.ASCII.GetBytes($"key:{i:D12}");
}
