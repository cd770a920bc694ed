using System.Diagnostics;

namespace PoolLib.Internal;

/// <summary>
/// What a pool's time-based options track about one object; made with its slot only when one of
/// <see cref="PoolOptions.MaxObjectLifetime"/>, <see cref="PoolOptions.IdleTimeout"/> or
/// <see cref="PoolOptions.LeakDetectionThreshold"/> is on. Timestamps are the pool's
/// <see cref="TimeProvider"/>'s.
/// </summary>
internal sealed class SlotHistory(long createdAt)
{
    /// <summary>When the object was made; read by the lifetime sweep.</summary>
    public long CreatedAt { get; } = createdAt;

    // 0 from each release until the idle sweep first sees the slot idle; then that sweep's timestamp.
    public long IdleSince;

    // The current rental, for leak detection: its number (0 before the first tracked one), when and
    // where it began; written by the taker, the number last. LeakReportedFor is the number of the
    // last rental reported, so each rental is reported once.
    public long RentalNumber;
    public long RentedAt;
    public StackTrace? TakenAt;
    public long LeakReportedFor;
}
