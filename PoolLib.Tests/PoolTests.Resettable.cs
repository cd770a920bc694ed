using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Diagnostics.Metrics.Testing;
using Microsoft.Extensions.ObjectPool;

namespace PoolLib.Tests;

// IResettable: a pool made from a factory without a clean-up resets each returning object with its own
// TryReset, and discards one whose reset fails, as DefaultObjectPool does.
public sealed partial class PoolTests
{
    [Test]
    public void Create_ResettableObjectsNoCleanUp_ReleaseCallsTryReset()
    {
        using Pool<ResettableObject> pool = Pool.Create(1, () => new ResettableObject());
        PoolSlot<ResettableObject> slot = pool.TakeSlot();

        pool.Release(slot);

        Assert.That(slot.Object.Resets, Is.EqualTo(1));
        Assert.That(pool.TakeSlot().Object, Is.SameAs(slot.Object));
    }

    [Test]
    public void Create_TryResetReturnsFalse_ObjectDiscardedWithReasonResetFailed()
    {
        using var discarded = new MetricCollector<long>(null, "PoolLib", "pool.objects.discarded");
        using Pool<ResettableObject> pool = Pool.Create(new PoolOptions { MaxCapacity = 1, Name = UniqueName() }, () => new ResettableObject());
        PoolSlot<ResettableObject> slot = pool.TakeSlot();
        slot.Object.ResetSucceeds = false;

        pool.Release(slot);

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        Assert.That(Reasons(discarded, pool.Name), Is.EqualTo(new[] { "reset_failed" }));
        Assert.That(pool.TotalCount, Is.Zero);
        Assert.That(pool.TakeSlot().Object, Is.Not.SameAs(slot.Object));
    }

    [Test]
    public void Create_TryResetThrows_ObjectDiscardedAndTheExceptionReachesTheReleaser()
    {
        using Pool<ResettableObject> pool = Pool.Create(1, () => new ResettableObject());
        PoolSlot<ResettableObject> slot = pool.TakeSlot();
        slot.Object.ResetFailure = new InvalidOperationException("reset failed");

        Assert.Throws<InvalidOperationException>(() => pool.Release(slot));

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        Assert.That(pool.TotalCount, Is.Zero);
    }

    [Test]
    public void Create_ResettableObjectsWithCleanUp_TheCleanUpRunsInstead()
    {
        int cleanUps = 0;
        using Pool<ResettableObject> pool = Pool.Create(1, () => new ResettableObject(), _ => cleanUps++);
        PoolSlot<ResettableObject> slot = pool.TakeSlot();
        slot.Object.ResetSucceeds = false;

        pool.Release(slot);

        Assert.That(cleanUps, Is.EqualTo(1));
        Assert.That(slot.Object.Resets, Is.Zero);
        Assert.That(pool.AvailableCount, Is.EqualTo(1));
    }

    [TestCase(false, TestName = "AsObjectPool_ResettableObjectReturnedAndResetFails_DiscardedLikeDefaultObjectPoolDoes")]
    [TestCase(true, TestName = "AddPool_ResettableObjectReturnedThroughTheContainerAndResetFails_Discarded")]
    public void ObjectPool_ResettableObjectsReturned_ResetOrDiscardedWhenTheResetFails(bool fromContainer)
    {
        var services = new ServiceCollection();
        services.AddPool(new PoolOptions { MaxCapacity = 2 }, _ => new ResettableObject());
        using ServiceProvider provider = services.BuildServiceProvider();
        using Pool<ResettableObject> created = Pool.Create(2, () => new ResettableObject());
        Pool<ResettableObject> pool = fromContainer ? provider.GetRequiredService<Pool<ResettableObject>>() : created;
        ObjectPool<ResettableObject> objects = fromContainer ? provider.GetRequiredService<ObjectPool<ResettableObject>>() : created.AsObjectPool();
        ResettableObject kept = objects.Get();
        ResettableObject dropped = objects.Get();
        dropped.ResetSucceeds = false;

        objects.Return(kept);
        objects.Return(dropped);

        Assert.That(kept.Resets, Is.EqualTo(1));
        Assert.That(dropped.DisposeCount, Is.EqualTo(1));
        Assert.That(pool.TotalCount, Is.EqualTo(1));
        Assert.That(objects.Get(), Is.SameAs(kept));
    }

    /// <summary>An object that resets itself, counting its resets, and fails to when told to.</summary>
    public sealed class ResettableObject : IResettable, IDisposable
    {
        public int Resets { get; private set; }

        public int DisposeCount { get; private set; }

        public bool ResetSucceeds { get; set; } = true;

        public Exception? ResetFailure { get; set; }

        public bool TryReset()
        {
            if (ResetFailure is { } failure)
            {
                throw failure;
            }

            Resets++;
            return ResetSucceeds;
        }

        public void Dispose() => DisposeCount++;
    }
}
