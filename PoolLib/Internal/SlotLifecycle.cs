namespace PoolLib.Internal;

/// <summary>
/// How a pool's slots begin and end: an object made (by the subclass's constructor, on the caller's thread, or by
/// its asynchronous one), registered and given its slot; and a slot discarded: unregistered, its object disposed and
/// its unit of the cap given back. Every method is called with a unit of the cap the caller holds, which a failure
/// gives back; no unit is ever lost or given back twice.
/// </summary>
internal sealed class SlotLifecycle<T> where T : class
{
    private readonly Pool<T> _pool;
    private readonly Func<T> _construct;
    private readonly Func<CancellationToken, ValueTask<T>> _constructAsync;
    private readonly TimeProvider _time;

    // Whether the pool makes its objects asynchronously: with the constructor it overrides.
    private readonly bool _createsAsynchronously;

    // Whether a new slot needs a history without maintenance: for ValidateAfterIdle's release stamps.
    private readonly bool _stampsReleases;

    public SlotLifecycle(Pool<T> pool, Func<T> construct, Func<CancellationToken, ValueTask<T>> constructAsync, bool createsAsynchronously, TimeProvider time, bool stampsReleases)
    {
        _pool = pool;
        _construct = construct;
        _constructAsync = constructAsync;
        _createsAsynchronously = createsAsynchronously;
        _time = time;
        _stampsReleases = stampsReleases;
    }

    /// <summary>
    /// Whether a pool creates asynchronously: its class overrides <c>ObjectConstructorAsync</c>, to which
    /// <paramref name="constructAsync"/> is bound; a class that overrides neither constructor is refused.
    /// </summary>
    public static bool CreatesAsynchronously(Func<T> construct, Func<CancellationToken, ValueTask<T>> constructAsync, string poolName)
    {
        bool asynchronous = constructAsync.Method.DeclaringType != typeof(Pool<T>);
        if (!asynchronous && construct.Method.DeclaringType == typeof(Pool<T>))
        {
            throw new NotSupportedException($"The pool '{poolName}' overrides neither ObjectConstructor nor ObjectConstructorAsync: it has no way to make an object.");
        }

        return asynchronous;
    }

    /// <summary>Makes an object on the calling thread; a pool that makes them asynchronously blocks its caller until it is made.</summary>
    public T Construct()
    {
        long start = PoolMetrics.CreateTimeEnabled ? _time.GetTimestamp() : 0;
        T? @object;
        if (_createsAsynchronously)
        {
            // Only the callers that must have an object now come here (TryAllocatePush, the ObjectPool adapter): they wait for it.
            ValueTask<T> creating = _constructAsync(CancellationToken.None);
            @object = creating.IsCompletedSuccessfully ? creating.Result : creating.AsTask().GetAwaiter().GetResult();
        }
        else
        {
            @object = _construct();
        }

        return Constructed(@object, start);
    }

    /// <summary>Makes one object with the asynchronous constructor, for the background creations.</summary>
    public async ValueTask<T> ConstructAsync(CancellationToken cancellationToken)
    {
        long start = PoolMetrics.CreateTimeEnabled ? _time.GetTimestamp() : 0;
        return Constructed(await _constructAsync(cancellationToken).ConfigureAwait(false), start);
    }

    /// <summary>Makes an object and its slot, rented, with one unit of the cap the caller already holds.</summary>
    public PoolSlot<T> CreateSlot()
    {
        // A Clear that begins while the object is made cannot see it: the registration retires it then.
        int retirements = _pool.Registry.Retirements;

        // The slot first: its state word, among its last fields, then lies beside its own object in memory, not beside
        // the next object made, which another thread may be using (PoolLib/README, "What the handle costs").
        var slot = new PoolSlot<T>(_pool);
        T @object;
        try
        {
            @object = Construct();
        }
        catch
        {
            _pool.ReturnUnit();
            throw;
        }

        slot.Fill(@object);
        return Register(slot, retirements);
    }

    /// <summary>Gives a new object its slot, rented, with one unit of the cap the caller already holds.</summary>
    /// <param name="object">The object.</param>
    /// <param name="retirements">The registry's <see cref="SlotRegistry{T}.Retirements"/> from before the object was made.</param>
    public PoolSlot<T> CreateSlot(T @object, int retirements) => Register(new PoolSlot<T>(_pool, @object), retirements);

    /// <summary>Starts the history of a slot whose object was just made, registers it, rented, and hands it to its object.</summary>
    private PoolSlot<T> Register(PoolSlot<T> slot, int retirements)
    {
        T @object = slot.Object;
        slot.History = _pool.Maintenance?.NewHistory() ?? (_stampsReleases ? new SlotHistory(_time.GetTimestamp()) : null);
        try
        {
            _pool.Registry.Add(slot, retirements);
        }
        catch
        {
            (@object as IDisposable)?.Dispose();
            _pool.ReturnUnit();
            throw;
        }

        try
        {
            _pool.HoldSlot(@object, slot);
        }
        catch (Exception failure)
        {
            // Never counted as created, so not counted as discarded either; unless maintenance took the new
            // rental back meanwhile, which discarded the object itself.
            if (slot.TryBeginReturn())
            {
                DiscardAfterFailure(slot, failure, reason: null);
            }

            throw;
        }

        PoolMetrics.Created(_pool.Name);
        return slot;
    }

    /// <summary>Makes an object and stores it idle, if the cap allows: what <see cref="Pool{T}.TryAllocatePush()"/> does.</summary>
    public bool TryAddIdle()
    {
        if (!_pool.TryTakeUnit())
        {
            return false;
        }

        StoreNew(CreateSlot());
        return true;
    }

    /// <summary>Stores an object a background creation made, with the unit of the cap it took; disposes it if the pool is disposed.</summary>
    public void AddCreated(T @object, int retirements)
    {
        if (_pool.IsDisposed)
        {
            try
            {
                (@object as IDisposable)?.Dispose();
            }
            finally
            {
                _pool.ReturnUnit();
            }

            return;
        }

        StoreNew(CreateSlot(@object, retirements));
    }

    /// <summary>Makes a new rented slot idle; unless maintenance took the rental back while HoldSlotInObject ran: the object is gone then.</summary>
    public void StoreNew(PoolSlot<T> slot)
    {
        if (!slot.TryBeginReturn())
        {
            return;
        }

        if (slot.IsRetired)
        {
            // Retired by a Clear that ran while it was made.
            Discard(slot, PoolMetrics.DiscardReason.Expired);
        }
        else
        {
            _pool.Store(slot);
        }
    }

    /// <summary>
    /// Disposes the object of a slot the caller owns (rented or returning, never idle) and, unless
    /// <paramref name="returnUnit"/> is <see langword="false"/>, gives its unit of the cap back,
    /// even if the object's Dispose throws.
    /// </summary>
    /// <param name="slot">The slot.</param>
    /// <param name="reason">Why, for the discarded-objects counter; <see langword="null"/> for an object never counted as created.</param>
    /// <param name="returnUnit">Whether the unit goes back to the pool, or stays with the caller.</param>
    public void Discard(PoolSlot<T> slot, PoolMetrics.DiscardReason? reason, bool returnUnit = true)
    {
        slot.MarkDiscarded();
        try
        {
            IdleSlotStacks<T>.Remove(slot);
            _pool.Registry.Remove(slot);
            if (reason is { } counted)
            {
                PoolMetrics.Discarded(_pool.Name, counted);
            }

            (slot.Object as IDisposable)?.Dispose();
        }
        finally
        {
            if (returnUnit)
            {
                _pool.ReturnUnit();
            }
        }
    }

    /// <summary>
    /// Discards a slot whose object just failed in user code with <paramref name="failure"/>, which
    /// the caller rethrows; if the object's Dispose throws too, both leave together instead.
    /// </summary>
    public void DiscardAfterFailure(PoolSlot<T> slot, Exception failure, PoolMetrics.DiscardReason? reason)
    {
        try
        {
            Discard(slot, reason);
        }
        catch (Exception disposeFailure)
        {
            throw new AggregateException(failure, disposeFailure);
        }
    }

    /// <summary>
    /// Discards an idle object a take refused (invalid or retired), unless maintenance took the rental back as
    /// abandoned meanwhile: one compare-and-swap decides which of them discards it. A taker that keeps the unit
    /// gives it back after all if the object's Dispose throws, since that exception ends the take.
    /// </summary>
    /// <returns>Whether the caller holds the unit: only if it asked to, and the take discarded it.</returns>
    public bool DiscardRefused(PoolSlot<T> slot, PoolMetrics.DiscardReason reason, bool keepUnit)
    {
        if (!slot.TryBeginReturn())
        {
            return false;
        }

        try
        {
            Discard(slot, reason, returnUnit: !keepUnit);
        }
        catch (Exception) when (keepUnit)
        {
            _pool.ReturnUnit();
            throw;
        }

        return keepUnit;
    }

    /// <summary>Checks a new object and records how long it took to make, if a listener wants that.</summary>
    private T Constructed(T? @object, long start)
    {
        if (@object is null)
        {
            throw new InvalidOperationException($"The pool '{_pool.Name}' got null from {(_createsAsynchronously ? "ObjectConstructorAsync" : "ObjectConstructor")} (or the factory given to Pool.Create).");
        }

        if (start != 0)
        {
            PoolMetrics.Constructed(_pool.Name, _time.GetElapsedTime(start));
        }

        return @object;
    }
}
