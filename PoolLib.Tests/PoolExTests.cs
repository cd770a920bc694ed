namespace PoolLib.Tests;

public sealed class PoolExTests
{
    [Test]
    public void TakeObject_NewObject_CarriesItsSlot()
    {
        using var pool = new BufferPool(2);

        PooledBuffer buffer = pool.TakeObject();

        Assert.That(buffer.PoolSlot, Is.Not.Null);
        Assert.That(buffer.PoolSlot!.Object, Is.SameAs(buffer));
    }

    [Test]
    public void Release_RentedObject_ReturnsItForTheNextTaker()
    {
        using var pool = new BufferPool(2);
        PooledBuffer buffer = pool.TakeObject();
        buffer.Bytes[0] = 42;

        pool.Release(buffer);

        Assert.That(pool.AvailableCount, Is.EqualTo(1));
        PooledBuffer again = pool.TakeObject();
        Assert.That(again, Is.SameAs(buffer));
        Assert.That(again.Bytes[0], Is.Zero, "CleanUp ran on release");
    }

    [Test]
    public void Release_Null_ThrowsAndChangesNothing()
    {
        using var pool = new BufferPool(2);
        pool.TakeObject();

        var exception = Assert.Throws<ArgumentNullException>(() => pool.Release((PooledBuffer)null!));

        Assert.That(exception!.ParamName, Is.EqualTo("object"));
        Assert.That(pool.AvailableCount, Is.Zero);
        Assert.That(pool.TotalCount, Is.EqualTo(1));
    }

    [Test]
    public void Release_ObjectNotFromAPool_ThrowsAndChangesNothing()
    {
        using var pool = new BufferPool(2);

        var exception = Assert.Throws<ArgumentException>(() => pool.Release(new PooledBuffer()));

        Assert.That(exception!.ParamName, Is.EqualTo("object"));
        Assert.That(pool.TotalCount, Is.Zero);
        Assert.That(pool.AvailableCount, Is.Zero);
    }

    [Test]
    public void Release_ObjectOfAnotherPool_ThrowsAndChangesNeitherPool()
    {
        using var pool = new BufferPool(2);
        using var otherPool = new BufferPool(2);
        PooledBuffer foreign = otherPool.TakeObject();

        var exception = Assert.Throws<ArgumentException>(() => pool.Release(foreign));

        Assert.That(exception!.ParamName, Is.EqualTo("object"));
        Assert.That(pool.TotalCount, Is.Zero);
        Assert.That(pool.AvailableCount, Is.Zero);
        Assert.That(otherPool.TotalCount, Is.EqualTo(1));
        Assert.That(otherPool.AvailableCount, Is.Zero);
        Assert.That(foreign.DisposeCount, Is.Zero);
    }

    [Test]
    public void Release_ObjectCarryingTheSlotOfAnotherObject_ThrowsAndChangesNothing()
    {
        using var pool = new BufferPool(2);
        PooledBuffer rented = pool.TakeObject();
        var impostor = new PooledBuffer { PoolSlot = rented.PoolSlot };

        var exception = Assert.Throws<ArgumentException>(() => pool.Release(impostor));

        Assert.That(exception!.ParamName, Is.EqualTo("object"));
        Assert.That(pool.TotalCount, Is.EqualTo(1));
        Assert.That(pool.AvailableCount, Is.Zero);
        pool.Release(rented);
        Assert.That(pool.AvailableCount, Is.EqualTo(1), "the real holder can still return its slot");
    }

    [Test]
    public void TakeObject_AfterDispose_Throws()
    {
        BufferPool pool = DisposedPool();

        Assert.Throws<ObjectDisposedException>(() => pool.TakeObject());

        Assert.That(pool.TotalCount, Is.Zero);
    }

    [Test]
    public async Task TakeObjectAsync_AfterDispose_FailsTheReturnedTaskNotTheCall()
    {
        BufferPool pool = DisposedPool();

        ValueTask<PooledBuffer> take = default;
        Assert.DoesNotThrow(() => take = pool.TakeObjectAsync());

        await Assert.ThrowsAsync<ObjectDisposedException>(async () => await take);

        Assert.That(pool.TotalCount, Is.Zero);
    }

    [Test]
    public void Release_AfterDispose_DisposesTheObjectOnce()
    {
        var pool = new BufferPool(2);
        PooledBuffer rented = pool.TakeObject();
        pool.Dispose();

        pool.Release(rented);

        Assert.That(rented.DisposeCount, Is.EqualTo(1));
        Assert.Throws<InvalidOperationException>(() => pool.Release(rented));
        Assert.That(rented.DisposeCount, Is.EqualTo(1));
        Assert.That(pool.TotalCount, Is.Zero);
        Assert.That(pool.AvailableCount, Is.Zero);
    }

    [Test]
    public void Release_Twice_ThrowsAndChangesNothing()
    {
        using var pool = new BufferPool(2);
        PooledBuffer buffer = pool.TakeObject();
        pool.Release(buffer);

        Assert.Throws<InvalidOperationException>(() => pool.Release(buffer));

        Assert.That(pool.AvailableCount, Is.EqualTo(1));
        Assert.That(pool.TotalCount, Is.EqualTo(1));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task TakeObjectAsync_Exhausted_CompletesWithTheReleasedObject(CancellationToken cancellationToken)
    {
        using var pool = new BufferPool(1);
        PooledBuffer held = pool.TakeObject();
        ValueTask<PooledBuffer> waiting = pool.TakeObjectAsync(cancellationToken);
        Assert.That(waiting.IsCompleted, Is.False);

        pool.Release(held);

        Assert.That(await waiting, Is.SameAs(held));
    }

    [Test]
    public async Task TakeObjectAsync_IdleObject_CompletesSynchronously()
    {
        using var pool = new BufferPool(1);
        pool.Release(pool.TakeObject());

        ValueTask<PooledBuffer> take = pool.TakeObjectAsync();

        Assert.That(take.IsCompletedSuccessfully, Is.True);
        Assert.That(await take, Is.Not.Null);
    }

    private static BufferPool DisposedPool()
    {
        var pool = new BufferPool(2);
        pool.Dispose();
        return pool;
    }

    [Test]
    public void Constructor_Options_AppliesThem()
    {
        using var pool = new OptionsBufferPool(new PoolOptions { MaxCapacity = 2, Name = "buffers" });

        PooledBuffer buffer = pool.TakeObject();

        Assert.That(pool.Name, Is.EqualTo("buffers"));
        Assert.That(pool.MaxCapacity, Is.EqualTo(2));
        Assert.That(buffer.PoolSlot, Is.Not.Null);
        pool.Release(buffer);
    }

    private sealed class OptionsBufferPool(PoolOptions options) : PoolEx<PooledBuffer>(options)
    {
        protected override PooledBuffer ObjectConstructor() => new();
    }

    private sealed class PooledBuffer : IPoolSlotHolder<PooledBuffer>, IDisposable
    {
        private int _disposeCount;

        public byte[] Bytes { get; } = new byte[16];

        public PoolSlot<PooledBuffer>? PoolSlot { get; set; }

        public int DisposeCount => Volatile.Read(ref _disposeCount);

        public void Dispose() => Interlocked.Increment(ref _disposeCount);
    }

    private sealed class BufferPool(int maxCapacity) : PoolEx<PooledBuffer>(maxCapacity)
    {
        protected override PooledBuffer ObjectConstructor() => new();

        protected override void CleanUp(PooledBuffer @object) => Array.Clear(@object.Bytes);
    }
}
