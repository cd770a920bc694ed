using Microsoft.Extensions.ObjectPool;

namespace PoolLib.Internal;

/// <summary>
/// The pool <see cref="Pool.Create{T}(PoolOptions, Func{T}, Action{T}?)"/> returns: its object's life is two
/// delegates. Without a clean-up, an object that is <see cref="IResettable"/> is reset by its own
/// <see cref="IResettable.TryReset"/>, and discarded when that fails, as <see cref="DefaultObjectPool{T}"/> does.
/// </summary>
internal sealed class FactoryPool<T> : Pool<T> where T : class
{
    private readonly Func<T> _factory;
    private readonly Action<T>? _cleanUp;

    public FactoryPool(PoolOptions options, Func<T> factory, Action<T>? cleanUp)
        : base(options, defaultName: $"Pool<{TypeNames.Display(typeof(T))}>", resetsObjects: cleanUp is null && IsResettable)
    {
        _factory = factory;
        _cleanUp = cleanUp;
        StartFillingMinIdle();
    }

    // Array covariance: a T[] is an IResettable[] exactly when T implements IResettable.
    internal static bool IsResettable => Array.Empty<T>() is IResettable[];

    protected override T ObjectConstructor() => _factory();

    protected override void CleanUp(T @object) => _cleanUp?.Invoke(@object);
}
