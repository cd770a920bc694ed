namespace PoolLib.Internal;

/// <summary>
/// Discards a pool's idle objects: down to <see cref="PoolOptions.MinIdle"/> (Trim and the idle timer), the retired
/// ones (Clear and the lifetime sweep) or all (Dispose). Each object is claimed first, so a concurrent take gets it
/// or nothing, and disposed after the claiming is over, so a Dispose that blocks holds up no other trim. One trim
/// down to MinIdle claims at a time: it counts the excess as it begins, so two at once would each discard that many.
/// </summary>
internal sealed class PoolTrimmer<T> where T : class
{
    private readonly Pool<T> _pool;
    private readonly int _minIdle;

    // 1 while a trim down to MinIdle claims its objects.
    private int _trimming;

    // Set by a Trim() that found another trim claiming: the claimer claims down to MinIdle once more before it ends,
    // since it counted its excess before the releases since, or was the timer's, which keeps what is recently idle.
    private int _trimAgain;

    public PoolTrimmer(Pool<T> pool, int minIdle)
    {
        _pool = pool;
        _minIdle = minIdle;
    }

    /// <summary>What <see cref="Pool{T}.Trim"/> does: discards idle objects down to MinIdle, then throws what their Dispose threw.</summary>
    public int Trim()
    {
        List<Exception>? failures = null;
        int trimmed = TrimToMinIdle(idleSince: null, ref failures);
        PoolThrowHelper.ThrowIfAny(failures);
        return trimmed;
    }

    /// <summary>What <see cref="Pool{T}.Clear"/> does: retires every object, and discards the idle ones now.</summary>
    public void Clear()
    {
        _pool.Registry.RetireAll();
        List<Exception>? failures = null;
        DiscardIdle(PoolMetrics.DiscardReason.Trimmed, keep: 0, retiredOnly: true, idleSince: null, ref failures);
        PoolThrowHelper.ThrowIfAny(failures);
    }

    /// <summary>What Dispose does to the idle objects: discards every one, then throws what their Dispose threw.</summary>
    public void DisposeIdle()
    {
        List<Exception>? failures = null;
        DiscardIdle(PoolMetrics.DiscardReason.Disposed, keep: 0, retiredOnly: false, idleSince: null, ref failures);
        PoolThrowHelper.ThrowIfAny(failures);
    }

    /// <summary>Trims and discards what the maintenance timer found, without throwing: the objects are gone either way.</summary>
    public void DiscardInMaintenance(bool retiredOnly, long? idleSince)
    {
        List<Exception>? dropped = null;
        if (retiredOnly)
        {
            DiscardIdle(PoolMetrics.DiscardReason.Expired, keep: 0, retiredOnly: true, idleSince: null, ref dropped);
        }

        if (idleSince is not null)
        {
            TrimToMinIdle(idleSince, ref dropped);
        }
    }

    /// <summary>Discards idle objects beyond <see cref="PoolOptions.MinIdle"/> (those idle since <paramref name="idleSince"/>
    /// if given), unless another trim is claiming its objects, which is left to do it (and, for a Trim(), to claim once more).</summary>
    private int TrimToMinIdle(long? idleSince, ref List<Exception>? failures)
    {
        List<PoolSlot<T>>? claimed = null;
        while (true)
        {
            if (Interlocked.CompareExchange(ref _trimming, 1, 0) == 0)
            {
                // A request made before this trim counts its excess is done by it.
                Interlocked.Exchange(ref _trimAgain, 0);
                try
                {
                    ClaimIdle(_minIdle, retiredOnly: false, idleSince, disposing: false, ref claimed, ref failures);
                }
                finally
                {
                    // A full fence before the read of _trimAgain, as a requester's is before its read of _trimming:
                    // of a request and the end of a trim, one sees the other.
                    Interlocked.Exchange(ref _trimming, 0);
                }

                if (Interlocked.Exchange(ref _trimAgain, 0) == 0)
                {
                    break;
                }

                idleSince = null;
                continue;
            }

            // A tick leaves the work to the trim under way, which keeps no more idle objects than the tick would.
            if (idleSince is not null)
            {
                break;
            }

            Interlocked.Exchange(ref _trimAgain, 1);
            if (Volatile.Read(ref _trimming) != 0)
            {
                break;
            }
        }

        return DiscardClaimed(claimed, PoolMetrics.DiscardReason.Trimmed, retiredOnly: false, ref failures);
    }

    /// <summary>
    /// Discards idle objects beyond <paramref name="keep"/>: all, the retired ones, or those seen idle
    /// since <paramref name="idleSince"/>; each claimed first, so a concurrent take gets it or nothing.
    /// Every object is disposed even if some throw; what they throw is added to <paramref name="failures"/>.
    /// </summary>
    private int DiscardIdle(PoolMetrics.DiscardReason reason, int keep, bool retiredOnly, long? idleSince, ref List<Exception>? failures)
    {
        List<PoolSlot<T>>? claimed = null;
        ClaimIdle(keep, retiredOnly, idleSince, disposing: reason == PoolMetrics.DiscardReason.Disposed, ref claimed, ref failures);
        return DiscardClaimed(claimed, reason, retiredOnly, ref failures);
    }

    /// <summary>
    /// Claims for <see cref="DiscardClaimed"/> the idle objects <see cref="DiscardIdle"/> discards, adding them to
    /// <paramref name="claimed"/>: from the claim on they are not idle, so no take and no later count sees them;
    /// <paramref name="disposing"/> for Dispose, which must also meet the slots still being returned.
    /// Runs no user code, unless the pool is disposed meanwhile (see <see cref="Pool{T}.Store"/>).
    /// </summary>
    private void ClaimIdle(int keep, bool retiredOnly, long? idleSince, bool disposing, ref List<PoolSlot<T>>? claimed, ref List<Exception>? failures)
    {
        int excess = keep == 0 ? int.MaxValue : _pool.AvailableCount - keep;
        bool sawReturning = false;
        for (int pass = 0; pass < 2 && excess > 0; pass++)
        {
            foreach (PoolSlot<T>? slot in _pool.Registry.Slots)
            {
                if (excess <= 0)
                {
                    break;
                }

                sawReturning |= slot is { IsReturning: true };

                // Retired is never cleared, so a slot read retired is still retired once claimed.
                if (slot is null || !slot.IsIdle || (retiredOnly && !slot.IsRetired) || !IdleSince(slot, idleSince) || !slot.TryClaimIdleForPool())
                {
                    continue;
                }

                _pool.Hints.Current.CountIdle(-1);

                // Taken and returned between the look and the claim: idle only from then, so it stays (unless the pool
                // was disposed meanwhile, and its Dispose throws).
                if (!IdleSince(slot, idleSince))
                {
                    try
                    {
                        _pool.Store(slot);
                    }
                    catch (Exception failure)
                    {
                        (failures ??= []).Add(failure);
                    }

                    continue;
                }

                excess--;
                (claimed ??= []).Add(slot);
            }

            // Dispose must meet the slots whose publication it may not have seen yet; after the barrier
            // it sees them idle, or their releasers see the pool disposed and discard them themselves.
            if (!disposing || !sawReturning)
            {
                break;
            }

            Interlocked.MemoryBarrierProcessWide();
            excess = int.MaxValue;
        }
    }

    /// <summary>Discards the slots <see cref="ClaimIdle"/> claimed, every one even if some throw; returns how many.</summary>
    private int DiscardClaimed(List<PoolSlot<T>>? claimed, PoolMetrics.DiscardReason reason, bool retiredOnly, ref List<Exception>? failures)
    {
        if (claimed is null)
        {
            return 0;
        }

        foreach (PoolSlot<T> slot in claimed)
        {
            try
            {
                _pool.Lifecycle.Discard(slot, reason == PoolMetrics.DiscardReason.Trimmed && !retiredOnly && slot.IsRetired ? PoolMetrics.DiscardReason.Expired : reason);
            }
            catch (Exception failure)
            {
                (failures ??= []).Add(failure);
            }
        }

        return claimed.Count;
    }

    /// <summary>Whether the idle sweep has seen a slot idle since <paramref name="limit"/> or earlier; true when there is no limit.</summary>
    private static bool IdleSince(PoolSlot<T> slot, long? limit) =>
        limit is not { } since || slot.History is not { } history || Volatile.Read(ref history.IdleSince) is var stamp && stamp != 0 && stamp <= since;
}
