namespace PoolLib.Internal;

/// <summary>
/// <see cref="PoolOptions.ValidateAfterIdle"/>: each release stamps when its object went idle, and an asynchronous
/// take checks an object idle longer than the option with <see cref="Pool{T}.ValidateAsync"/> before handing it out,
/// discarding it and taking another if it fails. Synchronous takes and fresher objects pay nothing but the stamp.
/// </summary>
internal sealed class IdleValidation<T> where T : class
{
    private readonly Pool<T> _pool;
    private readonly TimeProvider _time;

    // How long an object may be idle before a check, in TimeProvider units.
    private readonly long _validateAfterIdle;

    public IdleValidation(Pool<T> pool, TimeProvider time, TimeSpan validateAfterIdle)
    {
        _pool = pool;
        _time = time;
        _validateAfterIdle = Math.Max(1, (long)(validateAfterIdle.TotalSeconds * time.TimestampFrequency));
    }

    /// <summary>Notes that a released slot's object is idle from now.</summary>
    public void StampRelease(PoolSlot<T> slot) => Volatile.Write(ref slot.History!.ReleasedAt, _time.GetTimestamp());

    /// <summary>
    /// Takes as <see cref="Pool{T}.TakeSlotAsync"/> does where <see cref="PoolOptions.ValidateAfterIdle"/> is set: each object
    /// idle longer than that is checked with <see cref="Pool{T}.ValidateAsync"/>, and the take goes on past those that fail.
    /// </summary>
    /// <param name="slot">An object already taken, or <see langword="null"/>.</param>
    /// <param name="cancellationToken">The take's token.</param>
    public async ValueTask<PoolSlot<T>> TakeCheckedAsync(PoolSlot<T>? slot, CancellationToken cancellationToken)
    {
        while (true)
        {
            slot ??= await (_pool.TakeUncheckedAsync(cancellationToken)).ConfigureAwait(false);
            if (!IsIdleTooLong(slot) || await IsHealthyOrDiscardedAsync(slot, cancellationToken).ConfigureAwait(false))
            {
                return slot;
            }

            slot = null;
        }
    }

    /// <summary>Whether a rented slot's object was idle longer than <see cref="PoolOptions.ValidateAfterIdle"/> before this take.</summary>
    public bool IsIdleTooLong(PoolSlot<T> slot) =>
        slot.History is { } history && _time.GetTimestamp() - Volatile.Read(ref history.ReleasedAt) >= _validateAfterIdle;

    /// <summary>
    /// Runs <see cref="Pool{T}.ValidateAsync"/> on a rented slot's object; discards it if it fails or throws, and puts it back idle,
    /// unused, if the take is cancelled meanwhile. False too if maintenance took the rental back as abandoned meanwhile.
    /// </summary>
    private async ValueTask<bool> IsHealthyOrDiscardedAsync(PoolSlot<T> slot, CancellationToken cancellationToken)
    {
        bool healthy;
        try
        {
            healthy = await _pool.CheckHealthAsync(slot.Object, cancellationToken).ConfigureAwait(false);
        }
        catch (OperationCanceledException) when (cancellationToken.IsCancellationRequested)
        {
            if (slot.TryBeginReturn())
            {
                _pool.Releases.StoreAgain(slot);
            }

            throw;
        }
        catch (Exception failure)
        {
            if (slot.TryBeginReturn())
            {
                _pool.Lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.Invalid);
            }

            throw;
        }

        if (!healthy)
        {
            _pool.Lifecycle.DiscardRefused(slot, PoolMetrics.DiscardReason.Invalid, keepUnit: false);
            return false;
        }

        // Found healthy now: as fresh as a release would leave it.
        Volatile.Write(ref slot.History!.ReleasedAt, _time.GetTimestamp());
        return slot.IsRented;
    }
}
