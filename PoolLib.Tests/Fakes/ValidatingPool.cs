namespace PoolLib.Tests.Fakes;

/// <summary>A <see cref="TrackedPool"/> that overrides Validate, which a plain pool never calls.</summary>
internal sealed class ValidatingPool : TrackedPool
{
    private int _validateCount;

    public ValidatingPool(int maxCapacity)
        : base(maxCapacity)
    {
    }

    public ValidatingPool(PoolOptions options)
        : base(options)
    {
    }

    /// <summary>Decides Validate; every object is valid while it is null.</summary>
    public Func<TrackedObject, bool>? OnValidate { get; set; }

    public int ValidateCount => Volatile.Read(ref _validateCount);

    protected override bool Validate(TrackedObject @object)
    {
        Interlocked.Increment(ref _validateCount);
        return OnValidate?.Invoke(@object) ?? true;
    }
}
