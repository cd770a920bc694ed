namespace PoolLib.Internal;

/// <summary>
/// The pool <see cref="Pool.Create{T}(PoolOptions, Func{CancellationToken, ValueTask{T}}, Action{T}?)"/> returns: its
/// objects are made by an asynchronous factory, in the background; cleaned up as <see cref="FactoryPool{T}"/> does.
/// </summary>
internal sealed class AsyncFactoryPool<T> : Pool<T> where T : class
{
    private readonly Func<CancellationToken, ValueTask<T>> _factory;
    private readonly Action<T>? _cleanUp;

    public AsyncFactoryPool(PoolOptions options, Func<CancellationToken, ValueTask<T>> factory, Action<T>? cleanUp)
        : base(options, defaultName: $"Pool<{TypeNames.Display(typeof(T))}>", resetsObjects: cleanUp is null && FactoryPool<T>.IsResettable)
    {
        _factory = factory;
        _cleanUp = cleanUp;
        StartFillingMinIdle();
    }

    protected override ValueTask<T> ObjectConstructorAsync(CancellationToken cancellationToken) => _factory(cancellationToken);

    protected override void CleanUp(T @object) => _cleanUp?.Invoke(@object);
}
