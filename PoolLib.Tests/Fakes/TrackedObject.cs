namespace PoolLib.Tests.Fakes;

/// <summary>A pooled object that records who holds it and how often it was disposed.</summary>
internal sealed class TrackedObject(Action? onFirstDispose = null) : IDisposable
{
    private static int s_nextId;
    private int _holder;
    private int _disposeCount;

    public int Id { get; } = Interlocked.Increment(ref s_nextId);

    public int DisposeCount => Volatile.Read(ref _disposeCount);

    /// <summary>Thrown from <see cref="Dispose"/> (after counting the call) when set.</summary>
    public Exception? DisposeFailure { get; set; }

    /// <summary>Runs inside each <see cref="Dispose"/>, after counting it; block in it to hold the disposer there.</summary>
    public Action? OnDispose { get; set; }

    /// <summary>Stamps <paramref name="holder"/> as the only holder; false if someone else holds it.</summary>
    public bool TryStampHolder(int holder) => Interlocked.CompareExchange(ref _holder, holder, 0) == 0;

    /// <summary>Clears the stamp; false if <paramref name="holder"/> was not the one holding it.</summary>
    public bool TryClearHolder(int holder) => Interlocked.CompareExchange(ref _holder, 0, holder) == holder;

    public void Dispose()
    {
        if (Interlocked.Increment(ref _disposeCount) == 1)
        {
            onFirstDispose?.Invoke();
        }

        OnDispose?.Invoke();
        if (DisposeFailure is { } failure)
        {
            throw failure;
        }
    }
}
