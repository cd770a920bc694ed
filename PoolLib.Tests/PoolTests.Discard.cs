using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

// PoolSlot.Discard ends a rental without storing the object, and Validate discards idle objects
// that went bad; either way the place under the cap comes back.
public sealed partial class PoolTests
{
    [Test]
    public void Discard_RentedObject_DisposesItAndFreesItsPlace()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        slot.Discard();

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        Assert.That(pool.CleanUpCount, Is.Zero);
        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.TakeSlot().Object, Is.Not.SameAs(slot.Object));
    }

    [Test]
    public async Task Discard_WhileATakerWaits_TheTakerGetsANewObject()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync();
        Assert.That(waiting.IsCompleted, Is.False);

        held.Discard();
        PoolSlot<TrackedObject> handed = await waiting;

        Assert.That(handed.Object, Is.Not.SameAs(held.Object));
        Assert.That(pool.CreatedCount, Is.EqualTo(2));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void Discard_SlotAlreadyReleased_ThrowsAndChangesNothing()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.Release(slot);

        Assert.Throws<InvalidOperationException>(slot.Discard);

        Assert.That(slot.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void Discard_Twice_SecondThrows()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        slot.Discard();

        Assert.Throws<InvalidOperationException>(slot.Discard);
        Assert.Throws<InvalidOperationException>(() => pool.Release(slot));

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
    }

    [Test]
    public void Discard_ObjectThrowsFromDispose_ThrowsAfterFreeingItsPlace()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        slot.Object.DisposeFailure = new InvalidOperationException("broken");

        var exception = Assert.Throws<InvalidOperationException>(slot.Discard);

        Assert.That(exception!.Message, Is.EqualTo("broken"));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Discard_AfterPoolDispose_DisposesTheObject()
    {
        var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.Dispose();

        slot.Discard();

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TakeSlot_IdleObjectFailsValidate_DiscardsItAndGoesOn()
    {
        using var pool = new ValidatingPool(2);
        PoolSlot<TrackedObject> broken = pool.TakeSlot();
        pool.Release(broken);
        pool.OnValidate = candidate => !ReferenceEquals(candidate, broken.Object);

        PoolSlot<TrackedObject> taken = pool.TakeSlot();

        Assert.That(taken.Object, Is.Not.SameAs(broken.Object));
        Assert.That(broken.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TryTakeSlot_EveryIdleObjectFailsValidate_DiscardsThemAllAndCreates()
    {
        using var pool = new ValidatingPool(3);
        pool.Prewarm(3);
        pool.OnValidate = _ => false;

        bool taken = pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot);

        Assert.That(taken, Is.True);
        Assert.That(pool.Created.Count(created => created.DisposeCount == 1), Is.EqualTo(3));
        Assert.That(slot!.Object.DisposeCount, Is.Zero);
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TakeSlot_NewObject_IsNotValidated()
    {
        using var pool = new ValidatingPool(1);

        pool.TakeSlot();

        Assert.That(pool.ValidateCount, Is.Zero);
    }

    [Test]
    public void TakeSlot_ValidateThrows_DiscardsTheObjectAndThrows()
    {
        using var pool = new ValidatingPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.Release(slot);
        pool.OnValidate = _ => throw new InvalidOperationException("cannot tell");

        Assert.Throws<InvalidOperationException>(() => pool.TakeSlot());

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public async Task TakeSlotAsync_ValidateOfTheThreadsOwnObjectThrows_FailsTheReturnedTaskNotTheCall()
    {
        using var pool = new ValidatingPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.Release(slot);
        pool.OnValidate = _ => throw new InvalidOperationException("cannot tell");

        ValueTask<PoolSlot<TrackedObject>> take = default;
        Assert.DoesNotThrow(() => take = pool.TakeSlotAsync());

        await Assert.ThrowsAsync<InvalidOperationException>(async () => await take);
        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public async Task TakeSlotAsync_WaiterHandedAnInvalidObject_GetsANewOne()
    {
        using var pool = new ValidatingPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync();
        pool.OnValidate = _ => false;

        pool.Release(held);
        PoolSlot<TrackedObject> handed = await waiting;

        Assert.That(handed.Object, Is.Not.SameAs(held.Object));
        Assert.That(held.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    [CancelAfter(10_000)]
    public void TakeSlotAsync_WaiterHandedAnInvalidObjectWhoseDisposeThrows_FailsAndGivesItsPlaceBack(CancellationToken cancellationToken)
    {
        using var pool = new ValidatingPool(1);
        PoolSlot<TrackedObject> held = pool.TakeSlot();
        ValueTask<PoolSlot<TrackedObject>> waiting = pool.TakeSlotAsync(cancellationToken);
        held.Object.DisposeFailure = new InvalidOperationException("broken");
        pool.OnValidate = _ => false;

        pool.Release(held);

        Assert.That(async () => await waiting, Throws.InvalidOperationException.With.Message.EqualTo("broken"));
        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.TryTakeSlot(out _), Is.True, "the place under the cap came back");
    }
}
