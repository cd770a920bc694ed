using PoolLib.Tests.Fakes;

namespace PoolLib.Tests;

public sealed partial class PoolTests
{
    [TestCase(0)]
    [TestCase(-5)]
    public void Constructor_MaxCapacityBelowOne_Throws(int maxCapacity)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => new TrackedPool(maxCapacity));

        Assert.That(exception!.ParamName, Is.EqualTo("maxCapacity"));
    }

    [Test]
    public void Constructor_ValidCapacity_CreatesNothing()
    {
        using var pool = new TrackedPool(4);

        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.MaxCapacity, Is.EqualTo(4));
        Assert.That(pool.CreatedCount, Is.Zero);
    }

    [Test]
    public void TryAllocatePush_WithinCapacity_StoresIdleObjects()
    {
        using var pool = new TrackedPool(4);

        bool allCreated = pool.Prewarm(3);

        Assert.That(allCreated, Is.True);
        AssertCounts(pool, total: 3, available: 3);
    }

    [Test]
    public void TryAllocatePush_BeyondCapacity_FillsToCapAndReturnsFalse()
    {
        using var pool = new TrackedPool(2);

        bool allCreated = pool.Prewarm(5);

        Assert.That(allCreated, Is.False);
        AssertCounts(pool, total: 2, available: 2);
        Assert.That(pool.PrewarmOne(), Is.False);
    }

    [Test]
    public void TryAllocatePush_NegativeCount_ThrowsAndChangesNothing()
    {
        using var pool = new TrackedPool(2);

        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => pool.Prewarm(-1));

        Assert.That(exception!.ParamName, Is.EqualTo("count"));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TakeSlot_EmptyPool_CreatesObject()
    {
        using var pool = new TrackedPool(2);

        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        Assert.That(pool.Created, Has.Member(slot.Object));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TakeSlot_IdleObject_ReusesItWithoutCreating()
    {
        using var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> first = pool.TakeSlot();
        pool.Release(first);

        PoolSlot<TrackedObject> second = pool.TakeSlot();

        Assert.That(second, Is.SameAs(first));
        Assert.That(pool.CreatedCount, Is.EqualTo(1));
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TryTakeSlot_Exhausted_ReturnsFalseWithoutWaiting()
    {
        using var pool = new TrackedPool(1);
        using PoolSlot<TrackedObject> held = pool.TakeSlot();

        bool taken = pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot);

        Assert.That(taken, Is.False);
        Assert.That(slot, Is.Null);
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TryTakeSlot_ZeroTimeoutExhausted_ReturnsFalse()
    {
        using var pool = new TrackedPool(1);
        using PoolSlot<TrackedObject> held = pool.TakeSlot();

        bool taken = pool.TryTakeSlot(TimeSpan.Zero, out PoolSlot<TrackedObject>? slot);

        Assert.That(taken, Is.False);
        Assert.That(slot, Is.Null);
        Assert.That(pool.WaiterCount, Is.Zero);
    }

    [TestCase(-2)]
    [TestCase(-1000)]
    public void TryTakeSlot_NegativeTimeout_ThrowsAndChangesNothing(int milliseconds)
    {
        using var pool = new TrackedPool(1);

        var exception = Assert.Throws<ArgumentOutOfRangeException>(
            () => pool.TryTakeSlot(TimeSpan.FromMilliseconds(milliseconds), out _));

        Assert.That(exception!.ParamName, Is.EqualTo("timeout"));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TryTakeSlot_TimeoutAboveIntMaxMilliseconds_Throws()
    {
        using var pool = new TrackedPool(1);

        var exception = Assert.Throws<ArgumentOutOfRangeException>(
            () => pool.TryTakeSlot(TimeSpan.FromMilliseconds((double)int.MaxValue + 1), out _));

        Assert.That(exception!.ParamName, Is.EqualTo("timeout"));
        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void Release_Null_ThrowsAndChangesNothing()
    {
        using var pool = new TrackedPool(1);
        pool.Prewarm(1);

        var exception = Assert.Throws<ArgumentNullException>(() => pool.Release(null!));

        Assert.That(exception!.ParamName, Is.EqualTo("slot"));
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void Release_SlotOfAnotherPool_ThrowsAndChangesNeitherPool()
    {
        using var pool = new TrackedPool(2);
        using var otherPool = new TrackedPool(2);
        PoolSlot<TrackedObject> foreign = otherPool.TakeSlot();

        var exception = Assert.Throws<ArgumentException>(() => pool.Release(foreign));

        Assert.That(exception!.ParamName, Is.EqualTo("slot"));
        AssertCounts(pool, total: 0, available: 0);
        AssertCounts(otherPool, total: 1, available: 0);
        Assert.That(otherPool.CleanUpCount, Is.Zero);
        otherPool.Release(foreign);
        AssertCounts(otherPool, total: 1, available: 1);
    }

    [Test]
    public void Release_SlotAlreadyInPool_ThrowsAndChangesNothing()
    {
        using var pool = new TrackedPool(2);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.Release(slot);

        Assert.Throws<InvalidOperationException>(() => pool.Release(slot));

        AssertCounts(pool, total: 1, available: 1);
        Assert.That(pool.CleanUpCount, Is.EqualTo(1));
        Assert.That(pool.TakeSlot(), Is.SameAs(slot));
        Assert.That(pool.TryTakeSlot(out _), Is.True, "The slot must be stored once, so a second take creates a new object.");
        Assert.That(pool.CreatedCount, Is.EqualTo(2));
    }

    [Test]
    public void Release_RentedSlot_RunsCleanUpBeforeAnotherTakerSeesIt()
    {
        using var pool = new TrackedPool(1);
        var cleaned = new List<TrackedObject>();
        pool.OnCleanUp = cleaned.Add;
        PoolSlot<TrackedObject> slot = pool.TakeSlot();

        pool.Release(slot);

        Assert.That(cleaned, Is.EqualTo(new[] { slot.Object }));
        AssertCounts(pool, total: 1, available: 1);
    }

    [Test]
    public void Release_CleanUpThrows_DiscardsObjectGivesCapacityBackAndPropagates()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        pool.OnCleanUp = _ => throw new FormatException("clean-up failed");

        Assert.Throws<FormatException>(() => pool.Release(slot));

        Assert.That(slot.Object.DisposeCount, Is.EqualTo(1));
        AssertCounts(pool, total: 0, available: 0);
        pool.OnCleanUp = null;
        PoolSlot<TrackedObject> next = pool.TakeSlot();
        Assert.That(next.Object, Is.Not.SameAs(slot.Object));
        Assert.Throws<InvalidOperationException>(() => pool.Release(slot), "A discarded slot cannot come back.");
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void Release_CleanUpAndDisposeBothThrow_ThrowsBothTogetherAndGivesCapacityBack()
    {
        using var pool = new TrackedPool(1);
        PoolSlot<TrackedObject> slot = pool.TakeSlot();
        var cleanUpFailure = new FormatException("clean-up failed");
        var disposeFailure = new FormatException("dispose failed");
        slot.Object.DisposeFailure = disposeFailure;
        pool.OnCleanUp = _ => throw cleanUpFailure;

        var thrown = Assert.Throws<AggregateException>(() => pool.Release(slot));

        Assert.That(thrown.InnerExceptions, Is.EqualTo(new Exception[] { cleanUpFailure, disposeFailure }));
        AssertCounts(pool, total: 0, available: 0);
        pool.OnCleanUp = null;
        Assert.That(pool.TryTakeSlot(out _), Is.True, "the failed release must not keep the only place under the cap");
    }

    [Test]
    public void TakeSlot_ConstructorThrows_GivesCapacityBackAndPropagates()
    {
        using var pool = new TrackedPool(1);
        pool.BeforeConstruct = () => throw new FormatException("constructor failed");

        Assert.Throws<FormatException>(() => pool.TakeSlot());

        AssertCounts(pool, total: 0, available: 0);
        pool.BeforeConstruct = null;
        Assert.That(pool.TryTakeSlot(out _), Is.True, "The failed construction must not keep the only place under the cap.");
    }

    [Test]
    public async Task TakeSlotAsync_ConstructorThrowsOnAThreadThatTookBefore_FailsTheReturnedTaskNotTheCall()
    {
        using var pool = new TrackedPool(2);
        pool.TakeSlot();
        pool.BeforeConstruct = () => throw new FormatException("constructor failed");

        ValueTask<PoolSlot<TrackedObject>> take = default;
        Assert.DoesNotThrow(() => take = pool.TakeSlotAsync());

        await Assert.ThrowsAsync<FormatException>(async () => await take);
        AssertCounts(pool, total: 1, available: 0);
    }

    [Test]
    public void TakeSlot_ConstructorReturnsNull_ThrowsInvalidOperationAndGivesCapacityBack()
    {
        using var pool = new TrackedPool(1) { ConstructNull = true };

        Assert.Throws<InvalidOperationException>(() => pool.TakeSlot());

        AssertCounts(pool, total: 0, available: 0);
    }

    [Test]
    public void TakeSlot_HoldSlotInObjectThrows_DisposesObjectGivesCapacityBackAndPropagates()
    {
        using var pool = new TrackedPool(1);
        pool.OnHoldSlot = _ => throw new FormatException("hand-over failed");

        Assert.Throws<FormatException>(() => pool.TakeSlot());

        AssertCounts(pool, total: 0, available: 0);
        Assert.That(pool.Created.Single().DisposeCount, Is.EqualTo(1));
        pool.OnHoldSlot = null;
        Assert.That(pool.TryTakeSlot(out PoolSlot<TrackedObject>? slot), Is.True, "The failed hand-over must not keep the only place under the cap.");
        Assert.That(slot!.Object, Is.Not.SameAs(pool.Created.First()));
    }

    [Test]
    public void TakeSlot_HoldSlotInObjectAndDisposeBothThrow_ThrowsBothTogetherAndGivesCapacityBack()
    {
        using var pool = new TrackedPool(1);
        var holdFailure = new FormatException("hand-over failed");
        var disposeFailure = new FormatException("dispose failed");
        pool.OnHoldSlot = created =>
        {
            created.DisposeFailure = disposeFailure;
            throw holdFailure;
        };

        var thrown = Assert.Throws<AggregateException>(() => pool.TakeSlot());

        Assert.That(thrown.InnerExceptions, Is.EqualTo(new Exception[] { holdFailure, disposeFailure }));
        AssertCounts(pool, total: 0, available: 0);
        pool.OnHoldSlot = null;
        Assert.That(pool.TryTakeSlot(out _), Is.True, "the failed hand-over must not keep the only place under the cap");
    }

    [Test]
    public void TryAllocatePush_ConstructorThrows_GivesCapacityBackAndPropagates()
    {
        using var pool = new TrackedPool(2);
        pool.BeforeConstruct = () => throw new FormatException("constructor failed");

        Assert.Throws<FormatException>(() => pool.Prewarm(2));

        AssertCounts(pool, total: 0, available: 0);
    }

    private static void AssertCounts<T>(Pool<T> pool, int total, int available)
        where T : class
    {
        Assert.That(pool.TotalCount, Is.EqualTo(total), nameof(pool.TotalCount));
        Assert.That(pool.AvailableCount, Is.EqualTo(available), nameof(pool.AvailableCount));
        Assert.That(IdleSlotCount(pool), Is.EqualTo(available), "the slots whose state says idle");
    }

    /// <summary>Counts the slots whose state says idle, one by one.</summary>
    private static int IdleSlotCount<T>(Pool<T> pool)
        where T : class
    {
        int idle = 0;
        foreach (PoolSlot<T>? slot in pool.Registry.Slots)
        {
            idle += slot is { IsIdle: true } ? 1 : 0;
        }

        return idle;
    }
}
