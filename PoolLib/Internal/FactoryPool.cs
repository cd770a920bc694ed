namespace PoolLib.Internal;

/// <summary>The pool <see cref="Pool.Create{T}(PoolOptions, Func{T}, Action{T}?)"/> returns: its object's life is two delegates.</summary>
internal sealed class FactoryPool<T> : Pool<T> where T : class
{
    private readonly Func<T> _factory;
    private readonly Action<T>? _cleanUp;

    public FactoryPool(PoolOptions options, Func<T> factory, Action<T>? cleanUp)
        : base(options, defaultName: $"Pool<{DisplayName(typeof(T))}>")
    {
        _factory = factory;
        _cleanUp = cleanUp;
    }

    protected override T ObjectConstructor() => _factory();

    protected override void CleanUp(T @object) => _cleanUp?.Invoke(@object);
}
