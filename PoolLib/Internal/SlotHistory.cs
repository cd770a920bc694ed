using System.Diagnostics;

namespace PoolLib.Internal;

/// <summary>
/// What a pool's time-based options track about one object; made with its slot only when one of them
/// is on. Timestamps are the pool's <see cref="TimeProvider"/>'s; rental numbers are the slot's.
/// </summary>
internal sealed class SlotHistory(long createdAt, long expiresAt = long.MaxValue)
{
    /// <summary>When the lifetime sweep retires the object: its own lifetime, spread from the others' (see PoolMaintenance).</summary>
    public long ExpiresAt { get; } = expiresAt;

    // When the object was last released, made, or found healthy by ValidateAsync; written only while ValidateAfterIdle is on.
    public long ReleasedAt = createdAt;

    // 0 from each release until the idle sweep first sees the slot idle; then that sweep's timestamp.
    public long IdleSince;

    // Written by the sweep only (sweeps never overlap): the rental it last saw rented and when it first
    // did, so that rental began no later; and the last rental reported as a leak, so each is reported once.
    public int SeenRental = -1;
    public long SeenRentedAt;
    public int LeakReportedFor = -1;

    // The last sampled rental, written by its taker: TracedRental goes to -1 first and to the rental's
    // number last, so a sweep that reads that number before and after the others read one rental's.
    public int TracedRental = -1;
    public long TracedAt;
    public StackTrace? TakenAt;

    // The rental maintenance took back as abandoned, or -1. A take-back writes InFlight(rental) before it
    // claims the slot, then the rental if its claim won or -1 if it lost: a release that finds the slot
    // claimed by someone reads the outcome (see TakenBackRental), and so tells a take-back from a second release.
    public int AbandonedRental = -1;

    /// <summary>The value of <see cref="AbandonedRental"/> while maintenance is claiming rental <paramref name="rental"/>.</summary>
    public static int InFlight(int rental) => -2 - rental;

    /// <summary>
    /// Gets <see cref="AbandonedRental"/>, first waiting out a take-back of rental <paramref name="rental"/> that is
    /// claiming the slot: its outcome is two writes away, with nothing in between that can block.
    /// </summary>
    public int TakenBackRental(int rental)
    {
        int taken = Volatile.Read(ref AbandonedRental);
        var backoff = new RetryBackoff();
        while (taken == InFlight(rental))
        {
            backoff.Wait();
            taken = Volatile.Read(ref AbandonedRental);
        }

        return taken;
    }
}
