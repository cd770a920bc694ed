using System.Text;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.ObjectPool;
using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// A Pool<T> behind ObjectPool<T>: what code written for DefaultObjectPool sees, and what the cap changes.
public sealed class PoolObjectPoolExtensionsTests
{
    [Test]
    public void Get_AfterReturn_HandsOutTheSameObject()
    {
        using var pool = new TrackedPool(2);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();

        TrackedObject first = objects.Get();
        objects.Return(first);
        TrackedObject again = objects.Get();

        Assert.That(again, Is.SameAs(first));
        Assert.That(pool.CleanUpCount, Is.EqualTo(1), "Return runs the pool's clean-up");
        Assert.That(pool.CreatedCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(10_000)]
    public void Get_PoolExhaustedByObjectsNeverReturned_MakesAnObjectOutsideThePool(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(2);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();
        TrackedObject[] dropped = [objects.Get(), objects.Get()];

        var third = Task.Run(objects.Get, cancellationToken);

        Assert.That(third.Wait(TimeSpan.FromSeconds(5)), Is.True, "Get waited for an object that will never come back");
        Assert.That(third.Result, Is.Not.AnyOf(dropped));
        Assert.That(pool.TotalCount, Is.EqualTo(2), "the object made outside the pool is not counted");
    }

    [Test]
    [CancelAfter(60_000)]
    public void Return_ObjectMadeOutsideThePoolByTwoThreadsAtOnce_DisposedOnceAndTheOtherThrows(CancellationToken cancellationToken)
    {
        const int Rounds = 20_000;
        using var pool = new TrackedPool(1);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();
        TrackedObject pooled = objects.Get();
        using var start = new Barrier(2);
        using var done = new Barrier(2);
        TrackedObject? unpooled = null;
        int refused = 0;
        void ReturnOnce()
        {
            try
            {
                objects.Return(Volatile.Read(ref unpooled)!);
            }
            catch (ArgumentException)
            {
                Interlocked.Increment(ref refused);
            }
        }

        TestThread other = TestThread.Start(() =>
        {
            for (int i = 0; i < Rounds; i++)
            {
                start.SignalAndWait(cancellationToken);
                ReturnOnce();
                done.SignalAndWait(cancellationToken);
            }
        });

        int disposedTwice = 0;
        int refusedOtherThanOnce = 0;
        for (int i = 0; i < Rounds; i++)
        {
            Volatile.Write(ref unpooled, objects.Get());
            Volatile.Write(ref refused, 0);
            start.SignalAndWait(cancellationToken);
            ReturnOnce();
            done.SignalAndWait(cancellationToken);
            disposedTwice += unpooled!.DisposeCount > 1 ? 1 : 0;
            refusedOtherThanOnce += Volatile.Read(ref refused) != 1 ? 1 : 0;
        }

        Assert.That(other.Join(TimeSpan.FromSeconds(20)), Is.True, "the other thread never finished");
        Assert.That(disposedTwice, Is.Zero, "rounds that disposed the object twice");
        Assert.That(refusedOtherThanOnce, Is.Zero, "rounds where not exactly one return threw, as a second return does");
        objects.Return(pooled);
    }

    [Test]
    [CancelAfter(10_000)]
    public void Return_ObjectMadeOutsideThePool_DisposesItAndLeavesThePoolAsItWas(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();
        TrackedObject pooled = objects.Get();
        var second = Task.Run(objects.Get, cancellationToken);
        Assert.That(second.Wait(TimeSpan.FromSeconds(5)), Is.True, "Get waited for an object that may never come back");
        TrackedObject unpooled = second.Result;

        objects.Return(unpooled);

        Assert.That(unpooled.DisposeCount, Is.EqualTo(1));
        Assert.That(pool.CleanUpCount, Is.Zero);
        Assert.Throws<ArgumentException>(() => objects.Return(unpooled), "returned twice");
        objects.Return(pooled);
        Assert.That(pool.TotalCount, Is.EqualTo(1));
        Assert.That(pool.AvailableCount, Is.EqualTo(1));
        Assert.That(objects.Get(), Is.SameAs(pooled));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Get_WaitingAdapterPoolExhausted_WaitsForAReturn(CancellationToken cancellationToken)
    {
        using var pool = new TrackedPool(1);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool(waitWhileExhausted: true);
        TrackedObject held = objects.Get();
        var second = Task.Run(objects.Get, cancellationToken);
        await Poll.UntilAsync(() => pool.WaiterCount == 1, cancellationToken);

        Assert.That(second.IsCompleted, Is.False, "the cap holds: Get waits");
        objects.Return(held);

        Assert.That(await second, Is.SameAs(held));
        Assert.That(pool.CreatedCount, Is.EqualTo(1));
    }

    [Test]
    public void Return_ObjectNotFromThisPool_ThrowsAndChangesNothing()
    {
        using var pool = new TrackedPool(1);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();

        var exception = Assert.Throws<ArgumentException>(() => objects.Return(new TrackedObject()));

        Assert.That(exception!.ParamName, Is.EqualTo("obj"));
        Assert.Throws<ArgumentNullException>(() => objects.Return(null!));
        Assert.That(pool.TotalCount, Is.Zero);
    }

    [Test]
    public void Return_Twice_Throws()
    {
        using var pool = new TrackedPool(1);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();
        TrackedObject taken = objects.Get();
        objects.Return(taken);

        Assert.Throws<InvalidOperationException>(() => objects.Return(taken));
    }

    // The pool behind the adapter serves other takers too (AddPool registers both): a Return after one of them took the
    // object must not end that taker's rental.
    [TestCase("the pool")]
    [TestCase("another adapter")]
    public void Return_TwiceAfterTheObjectWasTakenElsewhere_ThrowsAndTheOtherRentalGoesOn(string takenFrom)
    {
        using var pool = new TrackedPool(1);
        ObjectPool<TrackedObject> objects = pool.AsObjectPool();
        TrackedObject taken = objects.Get();
        objects.Return(taken);
        TrackedObject takenAgain = takenFrom == "the pool" ? pool.TakeSlot().Object : pool.AsObjectPool().Get();

        Assert.That(takenAgain, Is.SameAs(taken));
        Assert.Throws<InvalidOperationException>(() => objects.Return(taken));
        Assert.That(pool.TryTakeSlot(out _), Is.False, "still rented to the other taker");
    }

    [Test]
    public void AsObjectPool_NullPool_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => PoolObjectPoolExtensions.AsObjectPool<TrackedObject>(null!));
        var waiting = Assert.Throws<ArgumentNullException>(() => PoolObjectPoolExtensions.AsObjectPool<TrackedObject>(null!, waitWhileExhausted: true));

        Assert.That(exception!.ParamName, Is.EqualTo("pool"));
        Assert.That(waiting!.ParamName, Is.EqualTo("pool"));
    }

    [Test]
    public void AddPool_ResolvedFromTheContainer_OnePoolBehindBothServicesAndDisposedWithIt()
    {
        var services = new ServiceCollection();
        services.AddSingleton(new StringBuilder("prefix"));
        services.AddPool(new PoolOptions { MaxCapacity = 3, Name = "builders" }, provider => new StringBuilder(provider.GetRequiredService<StringBuilder>().ToString()), builder => builder.Clear());
        Pool<StringBuilder> pool;
        using (ServiceProvider provider = services.BuildServiceProvider())
        {
            pool = provider.GetRequiredService<Pool<StringBuilder>>();
            ObjectPool<StringBuilder> objects = provider.GetRequiredService<ObjectPool<StringBuilder>>();

            StringBuilder built = objects.Get();
            Assert.That(built.ToString(), Is.EqualTo("prefix"), "the factory sees the container's services");
            objects.Return(built);

            Assert.That(pool.Name, Is.EqualTo("builders"));
            Assert.That(pool.MaxCapacity, Is.EqualTo(3));
            Assert.That(pool.AvailableCount, Is.EqualTo(1), "the ObjectPool returned into the same Pool");
        }

        Assert.Throws<ObjectDisposedException>(() => pool.TakeSlot());
    }

    [Test]
    public void AddPool_NullArguments_Throw()
    {
        var services = new ServiceCollection();

        Assert.That(Assert.Throws<ArgumentNullException>(() => services.AddPool<StringBuilder>((PoolOptions)null!, _ => new StringBuilder()))!.ParamName, Is.EqualTo("options"));
        Assert.That(Assert.Throws<ArgumentNullException>(() => services.AddPool<StringBuilder>(new PoolOptions { MaxCapacity = 1 }, null!))!.ParamName, Is.EqualTo("factory"));
        Assert.That(Assert.Throws<ArgumentNullException>(() => PoolServiceCollectionExtensions.AddPool<StringBuilder>(null!, new PoolOptions { MaxCapacity = 1 }, _ => new StringBuilder()))!.ParamName, Is.EqualTo("services"));
    }
}
