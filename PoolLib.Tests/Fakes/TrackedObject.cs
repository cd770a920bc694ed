namespace PoolLib.Tests.Fakes;

/// <summary>A pooled object that records who holds it and how often it was disposed.</summary>
internal sealed class TrackedObject : IDisposable
{
    private static int s_nextId;
    private int _holder;
    private int _disposeCount;

    public int Id { get; } = Interlocked.Increment(ref s_nextId);

    public int DisposeCount => Volatile.Read(ref _disposeCount);

    /// <summary>Thrown from <see cref="Dispose"/> (after counting the call) when set.</summary>
    public Exception? DisposeFailure { get; set; }

    /// <summary>Stamps <paramref name="holder"/> as the only holder; false if someone else holds it.</summary>
    public bool TryStampHolder(int holder) => Interlocked.CompareExchange(ref _holder, holder, 0) == 0;

    /// <summary>Clears the stamp; false if <paramref name="holder"/> was not the one holding it.</summary>
    public bool TryClearHolder(int holder) => Interlocked.CompareExchange(ref _holder, 0, holder) == holder;

    public void Dispose()
    {
        Interlocked.Increment(ref _disposeCount);
        if (DisposeFailure is { } failure)
        {
            throw failure;
        }
    }
}
