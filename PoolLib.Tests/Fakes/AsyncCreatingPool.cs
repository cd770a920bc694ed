using System.Collections.Concurrent;
using System.Threading.Channels;

namespace PoolLib.Tests.Fakes;

/// <summary>
/// A pool whose objects are made asynchronously, each creation held open until the test ends it: so a test decides
/// when, in what order and how each creation finishes, and sees how many ran at once.
/// </summary>
internal sealed class AsyncCreatingPool : Pool<TrackedObject>
{
    private readonly Channel<Creation> _pending = Channel.CreateUnbounded<Creation>();
    private int _inFlight;
    private int _peakInFlight;
    private int _startedCount;

    public AsyncCreatingPool(PoolOptions options)
        : base(options)
    {
    }

    public int StartedCount => Volatile.Read(ref _startedCount);

    public int PeakInFlight => Volatile.Read(ref _peakInFlight);

    /// <summary>Gets or sets what ValidateAsync answers; it records the objects it was asked about.</summary>
    public Func<TrackedObject, CancellationToken, ValueTask<bool>>? OnValidateAsync { get; set; }

    public ConcurrentQueue<TrackedObject> ValidatedAsync { get; } = new();

    public void FillNow() => StartFillingMinIdle();

    /// <summary>Waits for the next creation the test has not yet seen to begin, and returns it.</summary>
    public ValueTask<Creation> NextCreationAsync(CancellationToken cancellationToken) => _pending.Reader.ReadAsync(cancellationToken);

    /// <summary>Takes the next creation begun that the test has not yet seen, if there is one.</summary>
    public bool TryTakeCreation([System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out Creation? creation) => _pending.Reader.TryRead(out creation);

    /// <summary>Completes when a creation the test has not yet seen has begun; takes none.</summary>
    public Task WaitForCreationAsync(CancellationToken cancellationToken) => _pending.Reader.WaitToReadAsync(cancellationToken).AsTask();

    protected override ValueTask<TrackedObject> ObjectConstructorAsync(CancellationToken cancellationToken)
    {
        Interlocked.Increment(ref _startedCount);
        int inFlight = Interlocked.Increment(ref _inFlight);
        for (int peak = Volatile.Read(ref _peakInFlight); inFlight > peak; peak = Volatile.Read(ref _peakInFlight))
        {
            Interlocked.CompareExchange(ref _peakInFlight, inFlight, peak);
        }

        var creation = new Creation(this, cancellationToken);
        _pending.Writer.TryWrite(creation);
        return new ValueTask<TrackedObject>(creation.Task);
    }

    protected override ValueTask<bool> ValidateAsync(TrackedObject @object, CancellationToken cancellationToken)
    {
        ValidatedAsync.Enqueue(@object);
        return OnValidateAsync?.Invoke(@object, cancellationToken) ?? new ValueTask<bool>(true);
    }

    /// <summary>One creation under way: the test ends it with <see cref="Succeed"/> or <see cref="Fail"/>; its token cancels it.</summary>
    public sealed class Creation
    {
        private readonly AsyncCreatingPool _pool;
        private readonly TaskCompletionSource<TrackedObject> _result = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private int _ended;

        public Creation(AsyncCreatingPool pool, CancellationToken token)
        {
            _pool = pool;
            Token = token;
            token.Register(() =>
            {
                if (End())
                {
                    _result.TrySetCanceled(token);
                }
            });
        }

        public CancellationToken Token { get; }

        public Task<TrackedObject> Task => _result.Task;

        public TrackedObject Succeed()
        {
            var made = new TrackedObject();
            Assert.That(End(), Is.True, "The creation had already ended.");
            _result.SetResult(made);
            return made;
        }

        public void Fail(Exception failure)
        {
            Assert.That(End(), Is.True, "The creation had already ended.");
            _result.SetException(failure);
        }

        private bool End()
        {
            if (Interlocked.Exchange(ref _ended, 1) != 0)
            {
                return false;
            }

            Interlocked.Decrement(ref _pool._inFlight);
            return true;
        }
    }
}
