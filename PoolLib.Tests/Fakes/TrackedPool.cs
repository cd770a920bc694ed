using System.Collections.Concurrent;

namespace PoolLib.Tests.Fakes;

/// <summary>A pool of <see cref="TrackedObject"/> that counts what it creates and cleans, with hooks to make either throw.</summary>
internal class TrackedPool : Pool<TrackedObject>
{
    private int _cleanUpCount;
    private int _liveCount;
    private int _peakLiveCount;

    public TrackedPool(int maxCapacity)
        : base(maxCapacity)
    {
    }

    public TrackedPool(PoolOptions options)
        : base(options)
    {
    }

    public ConcurrentQueue<TrackedObject> Created { get; } = new();

    public int CreatedCount => Created.Count;

    public int CleanUpCount => Volatile.Read(ref _cleanUpCount);

    /// <summary>Gets the most objects that were ever alive at once (constructed and not yet disposed), counted by the objects themselves.</summary>
    public int PeakLiveCount => Volatile.Read(ref _peakLiveCount);

    /// <summary>Runs before each construction; throw from it to make the constructor fail.</summary>
    public Action? BeforeConstruct { get; set; }

    /// <summary>Makes the constructor return null, as a broken subclass might.</summary>
    public bool ConstructNull { get; set; }

    /// <summary>Runs inside each clean-up; throw from it to make the clean-up fail.</summary>
    public Action<TrackedObject>? OnCleanUp { get; set; }

    /// <summary>Runs when a new object is given its slot; throw from it to make that hand-over fail.</summary>
    public Action<TrackedObject>? OnHoldSlot { get; set; }

    public bool Prewarm(int count) => TryAllocatePush(count);

    public bool PrewarmOne() => TryAllocatePush();

    protected override TrackedObject ObjectConstructor()
    {
        BeforeConstruct?.Invoke();
        if (ConstructNull)
        {
            return null!;
        }

        var created = new TrackedObject(onFirstDispose: () => Interlocked.Decrement(ref _liveCount));
        int live = Interlocked.Increment(ref _liveCount);
        for (int peak = Volatile.Read(ref _peakLiveCount); live > peak; peak = Volatile.Read(ref _peakLiveCount))
        {
            Interlocked.CompareExchange(ref _peakLiveCount, live, peak);
        }

        Created.Enqueue(created);
        return created;
    }

    protected override void HoldSlotInObject(TrackedObject @object, PoolSlot<TrackedObject> slot) => OnHoldSlot?.Invoke(@object);

    protected override void CleanUp(TrackedObject @object)
    {
        Interlocked.Increment(ref _cleanUpCount);
        OnCleanUp?.Invoke(@object);
    }
}
