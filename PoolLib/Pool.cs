using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Microsoft.Extensions.ObjectPool;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>
/// A thread-safe pool of objects that are expensive to create, with a hard cap on how many exist at
/// once. Subclasses say how to make an object (<see cref="ObjectConstructor"/>) and, optionally, how
/// to reset it (<see cref="CleanUp"/>) and where it keeps its slot (<see cref="HoldSlotInObject"/>).
/// </summary>
/// <typeparam name="T">The pooled type.</typeparam>
/// <remarks>
/// Every member is safe to call from any number of threads at once. Waiters are served in arrival
/// order; user code never runs under a lock of the pool; an object whose hook throws is discarded.
/// </remarks>
public abstract class Pool<T> : IDisposable, PoolMetrics.IObservedPool, TakeWaiters<T>.ISupply where T : class
{
    private readonly LockFreeSemaphore _allocationBudget;
    private readonly SlotRegistry<T> _registry = new();
    private readonly ThreadHintTable<T> _hints;
    private readonly IdleSlotStacks<T> _idleStacks = new();
    private readonly TakeWaiters<T> _waiters = new();
    private readonly PoolMaintenance<T>? _maintenance;
    private readonly string _name;
    private readonly int _minIdle;
    private readonly TimeProvider _time;

    // No thread needs hints for more slots than the cap.
    private readonly int _maxHints;

    // One take in this many records where it was taken; 0 while leak detection or its sampling is off.
    private readonly int _leakSamplingInterval;

    // Whether a release does more than its fast path: it resets idle time, or calls IResettable.TryReset.
    private readonly bool _tracksIdleTime;
    private readonly bool _resetsObjects;
    private readonly bool _releasesSlowly;

    // 1 while a trim down to MinIdle (Trim, or the timer's after its sweep) counts the objects beyond MinIdle and claims
    // them: two at once would each claim that many. Claimed objects are no longer idle, so the next trim counts without
    // them; their Dispose runs after this is cleared, so that a slow one holds up no other trim.
    private int _trimming;

    // Set by a Trim() that found another trim claiming: the claimer claims down to MinIdle once more before it ends,
    // since the trim it ran counted its excess before the releases since, or was the timer's, which keeps what is
    // recently idle.
    private int _trimAgain;

    /// <summary>Initialises a pool that never holds more than <paramref name="maxCapacity"/> objects at once.</summary>
    /// <param name="maxCapacity">The cap on objects alive at once (idle plus rented); at least 1.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxCapacity"/> is less than 1.</exception>
    /// <remarks>No object is created here; call <see cref="TryAllocatePush(int)"/> to pre-warm.</remarks>
    protected Pool(int maxCapacity)
        : this(ValidMaxCapacity(maxCapacity))
    {
    }

    /// <summary>Initialises a pool as <paramref name="options"/> say.</summary>
    /// <param name="options">The cap, the name and the optional features; read once, here.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">
    /// An option is out of range: <see cref="PoolOptions.MaxCapacity"/> less than 1,
    /// <see cref="PoolOptions.MinIdle"/> negative or above the cap, a time span zero or negative;
    /// the exception's parameter name names the option.
    /// </exception>
    /// <exception cref="ArgumentException"><see cref="PoolOptions.Name"/> is empty or white space.</exception>
    /// <remarks>No object is created here; call <see cref="TryAllocatePush(int)"/> to pre-warm.</remarks>
    protected Pool(PoolOptions options)
        : this(options, defaultName: null)
    {
    }

    /// <summary>The constructor every other one calls.</summary>
    /// <param name="options">The options, checked here.</param>
    /// <param name="defaultName">Replaces the type's name as the default name.</param>
    /// <param name="resetsObjects">Whether a release calls the object's <see cref="IResettable.TryReset"/> instead of <see cref="CleanUp"/>.</param>
    private protected Pool(PoolOptions options, string? defaultName, bool resetsObjects = false)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        _allocationBudget = new LockFreeSemaphore(options.MaxCapacity, options.MaxCapacity);
        _name = options.Name ?? defaultName ?? DisplayName(GetType());
        _minIdle = options.MinIdle;
        _time = options.TimeProvider ?? TimeProvider.System;
        _maxHints = (int)Math.Min(1 << 16, BitOperations.RoundUpToPowerOf2((uint)options.MaxCapacity));
        _leakSamplingInterval = options.LeakDetectionThreshold is null ? 0 : options.LeakSamplingInterval;
        _hints = new ThreadHintTable<T>(_leakSamplingInterval);
        _maintenance = PoolMaintenance<T>.Create(this, options);
        _tracksIdleTime = _maintenance?.TracksIdleTime ?? false;
        _resetsObjects = resetsObjects;
        _releasesSlowly = _tracksIdleTime | resetsObjects;
        PoolMetrics.Track(this);
    }

    /// <summary>
    /// Raised, once per rental, when an object has been rented for longer than
    /// <see cref="PoolOptions.LeakDetectionThreshold"/>; never raised while that option is off.
    /// </summary>
    /// <remarks>
    /// Raised on a timer thread, after the threshold passes: the timer, which ticks every quarter of
    /// the shortest of the pool's time spans, notes when it first sees a rental, so a report comes up to
    /// two ticks late, never early. The rental goes on: the pool only reports it. Handlers run one at a
    /// time, in the order the leaks were found, after the tick's sweep: one that blocks holds up later
    /// events, not the timer. An exception thrown by a handler is caught and dropped, so that the other
    /// handlers run.
    /// </remarks>
    public event EventHandler<PoolLeakEventArgs>? RentalLeakSuspected;

    /// <summary>
    /// Raised, once per rental, when a rental reported by <see cref="RentalLeakSuspected"/> has come
    /// back (released or discarded by its renter); not for one the pool took back as abandoned.
    /// </summary>
    /// <remarks>
    /// Raised on a timer thread, after the report, at the first tick after the release; <see cref="PoolLeakEventArgs.HeldFor"/>
    /// is counted to that tick. Handlers run and their exceptions are dropped as for <see cref="RentalLeakSuspected"/>.
    /// </remarks>
    public event EventHandler<PoolLeakEventArgs>? LeakedRentalReturned;

    /// <summary>Gets the pool's name, as metrics and leak reports show it: <see cref="PoolOptions.Name"/>, or the pool type's name.</summary>
    public string Name => _name;

    /// <summary>Gets the cap on objects alive at once, idle and rented together.</summary>
    public int MaxCapacity => _allocationBudget.MaxCount;

    /// <summary>Gets how many objects exist: created and not yet discarded, idle or rented.</summary>
    /// <remarks>Never greater than <see cref="MaxCapacity"/>. A snapshot under concurrent use.</remarks>
    public int TotalCount => _allocationBudget.MaxCount - _allocationBudget.CurrentCount;

    /// <summary>Gets how many objects are idle in the pool right now.</summary>
    /// <remarks>
    /// Costs a read per object that exists; no take or release pays to keep a count. Exact when no take
    /// or release is in flight; under concurrent use a snapshot, never greater than <see cref="TotalCount"/>.
    /// </remarks>
    public int AvailableCount => Math.Min(_registry.CountIdle(), TotalCount);

    /// <summary>Gets how many takers are waiting for an object.</summary>
    public int WaiterCount => _waiters.Count;

    /// <summary>Gets every slot the pool holds, for maintenance; entries may be null.</summary>
    internal ReadOnlySpan<PoolSlot<T>?> Slots => _registry.Slots;

    /// <summary>Takes an object, waiting as long as it takes while the pool is exhausted.</summary>
    /// <returns>The slot of the rented object; dispose it or pass it to <see cref="Release(PoolSlot{T})"/> to return it.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    /// <remarks>Any exception from <see cref="ObjectConstructor"/> or <see cref="Validate"/> reaches the caller; the cap is untouched by it.</remarks>
    public PoolSlot<T> TakeSlot() => TakeFast(out _) ?? TakeSlotSlow(start: 0, deadline: long.MaxValue)!;

    /// <summary>Takes an object if one is idle or may be created; never waits.</summary>
    /// <param name="slot">The slot of the rented object, or <see langword="null"/> when this returns <see langword="false"/>.</param>
    /// <returns><see langword="false"/> if the pool is exhausted or other takers are already waiting.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <remarks>
    /// An object that another thread is returning at that very moment (it has not yet finished its
    /// clean-up) is not waited for; if the cap allows, a new object is created instead.
    /// </remarks>
    public bool TryTakeSlot([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        slot = TakeFast(out bool foundNone) ?? (foundNone ? null : TakeSlotSlow(start: 0, deadline: 0));
        return slot is not null;
    }

    /// <summary>Takes an object, waiting at most <paramref name="timeout"/> while the pool is exhausted.</summary>
    /// <param name="timeout">How long to wait, from this call; <see cref="TimeSpan.Zero"/> not at all, <see cref="Timeout.InfiniteTimeSpan"/> forever.</param>
    /// <param name="slot">The slot of the rented object, or <see langword="null"/> when this returns <see langword="false"/>.</param>
    /// <returns><see langword="false"/> if the wait timed out; the pool is then exactly as if this had never been called.</returns>
    /// <exception cref="ArgumentOutOfRangeException">
    /// <paramref name="timeout"/> is negative other than <see cref="Timeout.InfiniteTimeSpan"/>, or longer than <see cref="int.MaxValue"/> milliseconds.
    /// </exception>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    public bool TryTakeSlot(TimeSpan timeout, [NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        long start = Stopwatch.GetTimestamp();
        if ((timeout < TimeSpan.Zero && timeout != Timeout.InfiniteTimeSpan) || timeout.TotalMilliseconds > int.MaxValue)
        {
            ThrowTimeoutOutOfRange(nameof(timeout));
        }

        long deadline = timeout == Timeout.InfiniteTimeSpan ? long.MaxValue : start + (long)(timeout.TotalSeconds * Stopwatch.Frequency);
        slot = TakeFast(out _) ?? TakeSlotSlow(start, deadline);
        return slot is not null;
    }

    /// <summary>Takes an object, waiting asynchronously while the pool is exhausted.</summary>
    /// <param name="cancellationToken">Cancels the wait; the pool is then exactly as if this had never been called.</param>
    /// <returns>
    /// The slot of the rented object. Completes synchronously, without allocating, when an object is
    /// idle. Every failure comes through it, never from the call itself.
    /// </returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled before an object was handed over.</exception>
    public ValueTask<PoolSlot<T>> TakeSlotAsync(CancellationToken cancellationToken = default)
    {
        // Before the fast path, so that a cancelled take never gets an object, whatever its thread took before.
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled<PoolSlot<T>>(cancellationToken);
        }

        PoolSlot<T>? slot;
        try
        {
            slot = TakeFast(out _);
        }
        catch (Exception failure)
        {
            // From user code (ObjectConstructor, HoldSlotInObject, Validate, a refused object's Dispose), as the slow path reports it.
            return ValueTask.FromException<PoolSlot<T>>(failure);
        }

        return slot is not null ? new ValueTask<PoolSlot<T>>(slot) : TakeSlotSlowAsync(cancellationToken);
    }

    /// <summary>Returns a rented object to the pool; the same as disposing its slot.</summary>
    /// <param name="slot">A slot taken from this pool and not yet returned.</param>
    /// <exception cref="ArgumentNullException"><paramref name="slot"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="slot"/> belongs to another pool.</exception>
    /// <exception cref="InvalidOperationException"><paramref name="slot"/> is already back in the pool.</exception>
    /// <remarks>
    /// Runs <see cref="CleanUp"/> on the caller's thread, then hands the object to the longest
    /// waiting taker or stores it. If <see cref="CleanUp"/> throws, the object is discarded and the
    /// exception propagates. After <see cref="Dispose()"/>, the object is disposed instead of stored.
    /// A release that throws <see cref="ArgumentException"/> or <see cref="InvalidOperationException"/>
    /// changes nothing; any other exception comes after the slot was returned (or discarded). A release
    /// of a rental the pool took back as abandoned does nothing and throws nothing.
    /// </remarks>
    public void Release(PoolSlot<T> slot)
    {
        ArgumentNullException.ThrowIfNull(slot);
        if (!ReferenceEquals(slot.Owner, this))
        {
            ThrowForeignSlot(nameof(slot));
        }

        if (!slot.TryBeginReturn())
        {
            RefuseRelease(slot, rental: -1);
            return;
        }

        // EndRental, written out: the clean-up's handler inline keeps a release to one call.
        if (_releasesSlowly | slot.NeedsCareOnRelease)
        {
            EndRentalSlow(slot);
            return;
        }

        try
        {
            CleanUp(slot.Object);
        }
        catch (Exception failure)
        {
            DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
            throw;
        }

        Store(slot);
    }

    /// <summary>Returns a rented object to the pool, if it is still in the rental <paramref name="rental"/>.</summary>
    /// <param name="slot">A slot taken from this pool and not yet returned.</param>
    /// <param name="rental">The slot's <see cref="PoolSlot{T}.Rental"/>, read when it was taken.</param>
    /// <exception cref="ArgumentNullException"><paramref name="slot"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="slot"/> belongs to another pool.</exception>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="rental"/> is negative.</exception>
    /// <exception cref="InvalidOperationException">
    /// <paramref name="slot"/> is back in the pool, or rented again since <paramref name="rental"/>: the
    /// caller holds a stale handle, and the object now belongs to someone else.
    /// </exception>
    /// <remarks>Otherwise exactly <see cref="Release(PoolSlot{T})"/>; the check costs nothing more.</remarks>
    public void Release(PoolSlot<T> slot, int rental)
    {
        ArgumentNullException.ThrowIfNull(slot);
        ArgumentOutOfRangeException.ThrowIfNegative(rental);
        if (!ReferenceEquals(slot.Owner, this))
        {
            ThrowForeignSlot(nameof(slot));
        }

        if (!slot.TryBeginReturn(rental))
        {
            RefuseRelease(slot, rental);
            return;
        }

        EndRental(slot);
    }

    /// <summary>Makes one new object. Called only while the cap allows one more.</summary>
    /// <returns>The new object; never <see langword="null"/>.</returns>
    /// <remarks>
    /// May run on several threads at once. If it throws, the place under the cap is given back and
    /// the exception reaches the taker; returning <see langword="null"/> throws <see cref="InvalidOperationException"/>.
    /// </remarks>
    protected abstract T ObjectConstructor();

    /// <summary>Resets an object on its way back, before any other taker can see it.</summary>
    /// <param name="object">The object being released.</param>
    /// <remarks>
    /// Runs on the releasing thread, once per release. If it throws, the object is discarded
    /// (disposed if <see cref="IDisposable"/>), its place under the cap is given back, and the
    /// exception reaches the releaser. The default does nothing.
    /// </remarks>
    protected virtual void CleanUp(T @object)
    {
    }

    /// <summary>Lets a new object keep a reference to its slot, for example in <c>SocketAsyncEventArgs.UserToken</c>.</summary>
    /// <param name="object">The object just made by <see cref="ObjectConstructor"/>.</param>
    /// <param name="slot">The slot that holds it for its whole life.</param>
    /// <remarks>Called once per object, right after it is made. The default does nothing.</remarks>
    protected virtual void HoldSlotInObject(T @object, PoolSlot<T> slot)
    {
    }

    /// <summary>Says whether an idle object may still be handed out; override to check, for example, that a connection is open.</summary>
    /// <param name="object">The idle object about to be handed to a taker.</param>
    /// <returns><see langword="false"/> to discard the object; the take then goes on with another idle object or a new one.</returns>
    /// <remarks>
    /// Called on the taking thread, for idle objects only, never for one just made. If it throws, the
    /// object is discarded and the exception reaches the taker. The default returns <see langword="true"/>.
    /// </remarks>
    protected virtual bool Validate(T @object) => true;

    /// <summary>Creates up to <paramref name="count"/> objects and stores them idle, within the cap.</summary>
    /// <param name="count">How many objects to create; zero or more.</param>
    /// <returns><see langword="true"/> if all were created; <see langword="false"/> if the cap stopped it early (those created stay).</returns>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="count"/> is negative.</exception>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <remarks>Safe to call from a subclass constructor once what <see cref="ObjectConstructor"/> reads is set.</remarks>
    protected bool TryAllocatePush(int count)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(count);
        for (int i = 0; i < count; i++)
        {
            if (!TryAllocatePush())
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Creates one object and stores it idle, if the cap allows.</summary>
    /// <returns><see langword="false"/> if <see cref="MaxCapacity"/> objects already exist.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <remarks>The object is for whichever thread takes first, not kept for the calling thread.</remarks>
    protected bool TryAllocatePush()
    {
        ThrowIfDisposed();
        if (!_allocationBudget.TryTake())
        {
            return false;
        }

        // Unless maintenance took the new rental back while HoldSlotInObject ran: the object is gone then.
        PoolSlot<T> slot = CreateSlot();
        if (!slot.TryBeginReturn())
        {
            return true;
        }

        if (slot.IsRetired)
        {
            // Retired by a Clear that ran while it was made.
            Discard(slot, PoolMetrics.DiscardReason.Expired);
        }
        else
        {
            Store(slot);
        }

        return true;
    }

    /// <summary>Disposes idle objects down to <see cref="PoolOptions.MinIdle"/>.</summary>
    /// <returns>How many idle objects were disposed.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <exception cref="AggregateException">Several objects threw from their <see cref="IDisposable.Dispose"/>.</exception>
    /// <remarks>
    /// Rented objects are not touched, and a take that runs meanwhile may take an idle object first. Trims choose their
    /// objects one at a time and dispose them afterwards, so an object whose Dispose blocks holds up no other trim. A
    /// trim that is choosing (another thread's, or the idle timer's) is left to do the work: it chooses down to MinIdle
    /// once more, and this returns 0 (what those objects' Dispose throws goes to that trim's caller, or is dropped by
    /// the timer).
    /// Every object to dispose is disposed even if some throw; then the one exception is rethrown as
    /// it is, or several in an <see cref="AggregateException"/>.
    /// </remarks>
    public int Trim()
    {
        ThrowIfDisposed();
        List<Exception>? failures = null;
        int trimmed = TrimToMinIdle(idleSince: null, ref failures);
        ThrowIfAny(failures);
        return trimmed;
    }

    /// <summary>
    /// Disposes every idle object now, and every rented one when it is released, so that from now on
    /// takers get only objects made after this call.
    /// </summary>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <exception cref="AggregateException">Several idle objects threw from their <see cref="IDisposable.Dispose"/>.</exception>
    /// <remarks>
    /// For objects that all went bad at once, such as connections to a server that restarted.
    /// <see cref="PoolOptions.MinIdle"/> does not apply. An object made before this call is never
    /// handed out after it: one that a concurrent release makes idle is disposed when a taker finds it.
    /// </remarks>
    public void Clear()
    {
        ThrowIfDisposed();
        _registry.RetireAll();

        List<Exception>? failures = null;
        DiscardIdle(PoolMetrics.DiscardReason.Trimmed, keep: 0, retiredOnly: true, idleSince: null, ref failures);
        ThrowIfAny(failures);
    }

    /// <summary>
    /// Disposes the pool: wakes every waiter with <see cref="ObjectDisposedException"/>, disposes the
    /// idle objects that are <see cref="IDisposable"/>, and from then on disposes released objects
    /// instead of storing them. Calling it again does nothing.
    /// </summary>
    /// <exception cref="AggregateException">Several idle objects threw from their <see cref="IDisposable.Dispose"/>; it holds their exceptions.</exception>
    /// <remarks>
    /// Safe to call concurrently with any other member; rented objects stay usable until released.
    /// Every idle object is disposed exactly once even when some throw; then the one exception is
    /// rethrown as it is, or several together in an <see cref="AggregateException"/>. A release
    /// racing with this call may dispose its own object, and then it throws that object's exception
    /// instead. The pool is disposed either way.
    /// </remarks>
    public void Dispose()
    {
        try
        {
            Dispose(disposing: true);
        }
        finally
        {
            GC.SuppressFinalize(this);
        }
    }

    /// <summary>Releases the pool's resources; override to release a subclass's own, calling the base.</summary>
    /// <param name="disposing"><see langword="true"/> when called from <see cref="Dispose()"/>.</param>
    protected virtual void Dispose(bool disposing)
    {
        if (!disposing || !_waiters.TryDispose(NewDisposedException))
        {
            return;
        }

        // The idle objects first: only this call disposes them, and the timer's and the meter's locks may throw
        // ThreadInterruptedException on an interrupted thread.
        try
        {
            List<Exception>? failures = null;
            DiscardIdle(PoolMetrics.DiscardReason.Disposed, keep: 0, retiredOnly: false, idleSince: null, ref failures);
            ThrowIfAny(failures);
        }
        finally
        {
            try
            {
                _maintenance?.Dispose();
            }
            finally
            {
                PoolMetrics.Untrack(this);
            }
        }
    }

    /// <summary>Trims and discards what the maintenance timer found, without throwing: the objects are gone either way.</summary>
    internal void DiscardIdleInMaintenance(bool retiredOnly, long? idleSince)
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

    /// <summary>Counts and raises <see cref="RentalLeakSuspected"/>, or <see cref="LeakedRentalReturned"/>, each handler in turn, dropping what they throw.</summary>
    internal void RaiseLeakEvent(PoolLeakEventArgs args, bool returned)
    {
        if (returned)
        {
            PoolMetrics.LeakReturned(_name);
        }
        else
        {
            PoolMetrics.LeakReported(_name);
        }

        if ((returned ? LeakedRentalReturned : RentalLeakSuspected) is not { } handlers)
        {
            return;
        }

        foreach (EventHandler<PoolLeakEventArgs> handler in Delegate.EnumerateInvocationList(handlers))
        {
            try
            {
                handler(this, args);
            }
            catch (Exception)
            {
                // A handler's failure must not stop the timer, the process, or the handlers after it.
            }
        }
    }

    /// <summary>
    /// Takes back a rental held past the abandoned-rental timeout, if it is still rented in
    /// <paramref name="rental"/>; the caller then discards it with <see cref="DiscardTakenBack"/>.
    /// </summary>
    internal bool TryTakeBackAbandoned(PoolSlot<T> slot, int rental)
    {
        // This and the renter's release race for one compare-and-swap from (rented, rental). The claim is
        // marked in flight first, so a release that loses reads it after the state it lost to, and waits
        // for the outcome (see SlotHistory.TakenBackRental).
        SlotHistory history = slot.History!;
        Volatile.Write(ref history.AbandonedRental, SlotHistory.InFlight(rental));
        if (!slot.TryBeginReturn(rental))
        {
            Volatile.Write(ref history.AbandonedRental, -1);
            return false;
        }

        Volatile.Write(ref history.AbandonedRental, rental);
        return true;
    }

    /// <summary>Discards the object of a rental taken back as abandoned, and gives its place under the cap to a waiter.</summary>
    internal void DiscardTakenBack(PoolSlot<T> slot)
    {
        try
        {
            Discard(slot, PoolMetrics.DiscardReason.Abandoned);
        }
        catch (Exception)
        {
            // The object's Dispose failed; it is gone, and its place under the cap is back, all the same.
        }
    }

    /// <summary>Makes an object that the pool neither counts nor keeps; for callers that must not wait (see <see cref="ObjectPoolAdapter{T}"/>).</summary>
    internal T CreateUnpooled()
    {
        ThrowIfDisposed();
        return Construct();
    }

    /// <summary>Ends a rental without storing the object; what <see cref="PoolSlot{T}.Discard"/> does.</summary>
    internal void DiscardRental(PoolSlot<T> slot)
    {
        if (!slot.TryBeginReturn())
        {
            RefuseRelease(slot, rental: -1);
            return;
        }

        RecordUse(slot);
        Discard(slot, _waiters.IsDisposed ? PoolMetrics.DiscardReason.Disposed : PoolMetrics.DiscardReason.Discarded);
    }

    /// <summary>
    /// The path every take tries first: the newest idle object the calling thread took before, else any
    /// idle object or a new one; unless a taker is waiting, which goes first, or the pool is disposed.
    /// Null when it finds none to hand out: the slow path looks again, and waits.
    /// </summary>
    /// <param name="foundNone">Set when it looked everywhere a take that does not wait looks, and found nothing.</param>
    private PoolSlot<T>? TakeFast(out bool foundNone)
    {
        foundNone = false;

        // A take due to be sampled for leak detection goes the slow way, which records where it was taken.
        if (!_waiters.IsQuietAndLive || _hints.CurrentOrNull is not { } hints
            || (_leakSamplingInterval != 0 && hints.CountDownToLeakSample()))
        {
            return null;
        }

        PoolSlot<T>? slot;
        if (!hints.TryTake(_registry.Array, out slot))
        {
            slot = TakeIdleOrNew(hints, out bool refused);
            foundNone = slot is null && !refused;
        }
        else if (slot.IsRetired ? !TryAccept(slot, hints, hinted: true, keepUnit: false, out _) : !IsValidOrDiscarded(slot, keepUnit: false, out _))
        {
            // Refused (retired or invalid, and discarded): the slow path looks further.
            slot = null;
        }

        if (slot is not null && PoolMetrics.UseTimeEnabled)
        {
            BeginUse(slot);
        }

        return slot;
    }

    /// <summary>
    /// For a take that its thread's hints did not serve: an idle object from the stacks, else a new one
    /// within the cap. Null when neither is there, or with <paramref name="refused"/> set when the idle
    /// object found was refused and discarded, so that another may be.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private PoolSlot<T>? TakeIdleOrNew(ThreadHints<T> hints, out bool refused)
    {
        bool unused = false;
        if (_idleStacks.TryTake(out PoolSlot<T>? slot, lookEverywhere: false, ref unused))
        {
            refused = !TryAccept(slot, hints, hinted: false, keepUnit: false, out _);
            return refused ? null : slot;
        }

        refused = false;
        if (!_allocationBudget.TryTake())
        {
            return null;
        }

        slot = CreateRentedSlot(hints);
        refused = slot is null;
        return slot;
    }

    /// <summary>
    /// Calls <see cref="Validate"/> for an idle slot the calling thread has claimed; discards it if it is refused or
    /// throws. False too if maintenance took the rental back as abandoned meanwhile (a validation that outlasted
    /// <see cref="PoolOptions.AbandonedRentalTimeout"/>): the object is gone, and its place under the cap with it.
    /// </summary>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="keepUnit">Whether a refused object's place under the cap stays with the caller (see <see cref="TryAccept"/>).</param>
    /// <param name="unitKept">Whether the caller holds a place under the cap after a refusal: as asked, unless taken back.</param>
    private bool IsValidOrDiscarded(PoolSlot<T> slot, bool keepUnit, out bool unitKept)
    {
        unitKept = false;
        bool valid;
        try
        {
            valid = Validate(slot.Object);
        }
        catch (Exception failure)
        {
            // Unless maintenance took the rental back meanwhile and discarded the object, which may be why Validate
            // threw: the take then gives it up, as it would had Validate returned.
            if (!slot.TryBeginReturn())
            {
                return false;
            }

            DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.Invalid);
            throw;
        }

        if (!valid)
        {
            unitKept = DiscardRefused(slot, PoolMetrics.DiscardReason.Invalid, keepUnit);
            return false;
        }

        return slot.IsRented;
    }

    /// <summary>
    /// Ends a rental whose return the caller has claimed: cleans the object up and stores it, or
    /// discards it if it is retired or the pool is disposed.
    /// </summary>
    private void EndRental(PoolSlot<T> slot)
    {
        if (_releasesSlowly | slot.NeedsCareOnRelease)
        {
            EndRentalSlow(slot);
            return;
        }

        if (CleanUpOrDiscard(slot))
        {
            Store(slot);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void EndRentalSlow(PoolSlot<T> slot)
    {
        RecordUse(slot);
        if (slot.IsRetired)
        {
            Discard(slot, PoolMetrics.DiscardReason.Expired);
            return;
        }

        if (_tracksIdleTime)
        {
            // Idle from now: the idle sweep stamps it the first time it finds it in the pool.
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        if (CleanUpOrDiscard(slot))
        {
            Store(slot);
        }
    }

    /// <summary>What a release whose claim failed owes: nothing for a rental taken back as abandoned (but a count); else an exception.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void RefuseRelease(PoolSlot<T> slot, int rental)
    {
        if (!slot.WasTakenBack(rental))
        {
            ThrowSlotAlreadyReturned();
        }

        PoolMetrics.ReleasedLate(_name);
    }

    /// <summary>Notes when a rental began, for the use-time histogram; only while a listener has it on.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void BeginUse(PoolSlot<T> slot)
    {
        slot.UseStart = _time.GetTimestamp();
        slot.MarkUseStamped();
    }

    /// <summary>Records how long a rental that is ending lasted, if its beginning was noted.</summary>
    private void RecordUse(PoolSlot<T> slot)
    {
        if (slot.TakeUseStamp())
        {
            PoolMetrics.Used(_name, _time.GetElapsedTime(slot.UseStart));
        }
    }

    /// <summary>Makes idle again a slot handed to a waiter that gave up, whose object nobody used.</summary>
    private void StoreAgain(PoolSlot<T> slot)
    {
        if (_tracksIdleTime)
        {
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        Store(slot);
    }

    /// <summary>Makes a returning slot idle, then does what its publication owes: an entry, a waiter served, a discard after Dispose.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Store(PoolSlot<T> slot)
    {
        slot.Publish();
        if (slot.Stack is null || !_waiters.IsQuietAndLive)
        {
            AfterPublish(slot);
        }
    }

    /// <summary>
    /// Gives a slot just published an entry if it has none, then serves a waiter with it or discards it
    /// after Dispose. Waiters and Dispose lock every idle stack after they announce themselves, and a
    /// push locks one, so the read of their word after a push cannot miss them (see <see cref="TakeWaiters{T}"/>).
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void AfterPublish(PoolSlot<T> slot)
    {
        if (slot.Stack is null)
        {
            _idleStacks.Push(slot);
        }

        if (_waiters.Count != 0)
        {
            bool unused = false;
            _waiters.Serve(this, slot, scan: false, ref unused);
        }

        if (_waiters.IsDisposed && slot.TryClaimIdleForPool())
        {
            Discard(slot, PoolMetrics.DiscardReason.Disposed);
        }
    }

    /// <summary>
    /// Takes any idle object or a new one, else waits until <paramref name="deadline"/>
    /// (<see cref="long.MaxValue"/>: for ever; not after <paramref name="start"/>: not at all). Returns
    /// <see langword="null"/> on timeout.
    /// </summary>
    /// <param name="start">When the take began, in <see cref="Stopwatch"/> units; 0 to read the clock only if it waits.</param>
    /// <param name="deadline">When to give up, in the same units.</param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private PoolSlot<T>? TakeSlotSlow(long start, long deadline)
    {
        StackTrace? trace = SampleTrace();
        PoolSlot<T>? slot = TakeOrWait(start, deadline);
        if (slot is not null)
        {
            BeginRental(slot, trace);
        }

        return slot;
    }

    /// <summary>Where a take begins, if it is one that leak detection samples; else <see langword="null"/>.</summary>
    private StackTrace? SampleTrace() =>
        _leakSamplingInterval != 0 && _hints.Current.TakeLeakSample(_leakSamplingInterval) ? CallerStackTrace.Capture() : null;

    /// <summary>What a take on the slow path owes its rental: where it began, if sampled, and when, if the use-time histogram is on.</summary>
    private void BeginRental(PoolSlot<T> slot, StackTrace? trace)
    {
        if (trace is not null)
        {
            _maintenance!.RecordTrace(slot, trace);
        }

        if (PoolMetrics.UseTimeEnabled)
        {
            BeginUse(slot);
        }
    }

    /// <summary>The body of <see cref="TakeSlotSlow"/>, with the same parameters and result.</summary>
    private PoolSlot<T>? TakeOrWait(long start, long deadline)
    {
        // Round again only when handed a slot that maintenance took back as abandoned before this thread ran: in the
        // queue then at the place it had.
        TakeWaiters<T>.Waiter? served = null;
        while (true)
        {
            if (TryTakeWithoutWaiting(out PoolSlot<T>? slot))
            {
                return slot;
            }

            if (deadline <= start)
            {
                return null;
            }

            TakeWaiters<T>.Waiter waiter = _waiters.Enqueue(this, start == 0 || served is not null ? Stopwatch.GetTimestamp() : start, NewDisposedException, served);
            bool completed;
            try
            {
                completed = waiter.WaitForCompletion(deadline);
            }
            catch (ThreadInterruptedException)
            {
                Abandon(waiter);
                throw;
            }

            if (!completed && _waiters.TryCancel(waiter, CancellationToken.None))
            {
                PoolMetrics.TimedOut(_name);
                return null;
            }

            if (Accept(waiter, waiter.Task.GetAwaiter().GetResult()) is { } accepted)
            {
                return accepted;
            }

            served = waiter;
        }
    }

    /// <summary>Any idle object, else a new one within the cap; never waits and never goes ahead of a waiter.</summary>
    private bool TryTakeWithoutWaiting([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        ThrowIfDisposed();
        ThreadHints<T> hints = _hints.Current;
        while (_waiters.IsQuietAndLive)
        {
            bool refused;
            if (hints.TryTake(_registry.Array, out slot))
            {
                refused = !TryAccept(slot, hints, hinted: true, keepUnit: false, out _);
            }
            else
            {
                slot = TakeIdleOrNew(hints, out refused);
            }

            if (!refused)
            {
                return slot is not null;
            }
        }

        slot = null;
        return false;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private ValueTask<PoolSlot<T>> TakeSlotSlowAsync(CancellationToken cancellationToken)
    {
        try
        {
            // Sampled here, on the caller's thread: a wait completes on another.
            StackTrace? trace = SampleTrace();
            if (TryTakeWithoutWaiting(out PoolSlot<T>? slot))
            {
                BeginRental(slot, trace);
                return new ValueTask<PoolSlot<T>>(slot);
            }

            return new ValueTask<PoolSlot<T>>(WaitAsync(_waiters.Enqueue(this, Stopwatch.GetTimestamp(), NewDisposedException), trace, cancellationToken));
        }
        catch (Exception failure)
        {
            return ValueTask.FromException<PoolSlot<T>>(failure);
        }
    }

    private async Task<PoolSlot<T>> WaitAsync(TakeWaiters<T>.Waiter waiter, StackTrace? trace, CancellationToken cancellationToken)
    {
        // Round again only when handed a slot that maintenance took back as abandoned before this continuation ran: in
        // the queue then at the place it had.
        while (true)
        {
            CancellationTokenRegistration registration = cancellationToken.UnsafeRegister(
                static (state, token) =>
                {
                    var waiter = (TakeWaiters<T>.Waiter)state!;
                    waiter.Queue.TryCancel(waiter, token);
                },
                waiter);

            PoolSlot<T>? handedOver;
            try
            {
                handedOver = await waiter.Task.ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                PoolMetrics.TimedOut(_name);
                throw;
            }
            finally
            {
                // Unregister, not Dispose: Dispose may wait (and so meet an interrupt) for a callback
                // running elsewhere, after the hand-over; a late callback finds the waiter unlinked and does nothing.
                registration.Unregister();
            }

            if (Accept(waiter, handedOver) is { } slot)
            {
                BeginRental(slot, trace);
                return slot;
            }

            waiter = _waiters.Enqueue(this, Stopwatch.GetTimestamp(), NewDisposedException, servedBefore: waiter);
        }
    }

    /// <summary>
    /// Turns what a waiter was handed into a rented slot: the slot itself, or a new one made with the granted unit of
    /// the cap; <see langword="null"/> when maintenance took the slot back as abandoned before the waiter ran, which
    /// leaves it nothing: it waits again.
    /// </summary>
    private PoolSlot<T>? Accept(TakeWaiters<T>.Waiter waiter, PoolSlot<T>? handedOver)
    {
        PoolMetrics.Waited(_name, waiter.StartTimestamp);
        ThreadHints<T> hints = _hints.Current;
        bool unitKept = true;
        if (handedOver is not null && TryAccept(handedOver, hints, hinted: false, keepUnit: true, out unitKept))
        {
            return handedOver;
        }

        if (!unitKept)
        {
            return null;
        }

        // Refused (retired or invalid): its place under the cap stayed with this taker, which makes a new object with it.
        if (_waiters.IsDisposed)
        {
            ReturnUnit();
            ThrowDisposed();
        }

        return CreateRentedSlot(hints);
    }

    /// <summary>Withdraws a waiter whose taker stops waiting for good, giving back whatever it was already handed.</summary>
    private void Abandon(TakeWaiters<T>.Waiter waiter)
    {
        if (_waiters.TryCancel(waiter, CancellationToken.None) || !waiter.Task.IsCompletedSuccessfully)
        {
            return;
        }

        // Served in between: a waiter is unlinked only together with its completion. A slot handed over stays rented
        // to it unless maintenance took it back as abandoned, which discarded it and gave its place back.
        if (waiter.Task.Result is { } slot)
        {
            if (slot.TryBeginReturn())
            {
                StoreAgain(slot);
            }
        }
        else
        {
            ReturnUnit();
        }
    }

    /// <summary>
    /// What a take owes for an idle slot it has claimed: a retired or invalid object is discarded (and
    /// this returns <see langword="false"/>); otherwise the slot is hinted.
    /// </summary>
    /// <param name="slot">The slot claimed.</param>
    /// <param name="hints">The calling thread's hints.</param>
    /// <param name="hinted">Whether the slot came from those hints, so needs no new one.</param>
    /// <param name="keepUnit">
    /// Whether a refused object's place under the cap stays with the caller, who makes a new object
    /// with it (a waiter that was handed the object), instead of going back to the pool.
    /// </param>
    /// <param name="unitKept">Whether the caller holds a place under the cap after a refusal: as asked, unless
    /// maintenance took the rental back meanwhile.</param>
    private bool TryAccept(PoolSlot<T> slot, ThreadHints<T> hints, bool hinted, bool keepUnit, out bool unitKept)
    {
        if (slot.IsRetired)
        {
            unitKept = DiscardRefused(slot, PoolMetrics.DiscardReason.Expired, keepUnit);
            return false;
        }

        if (!IsValidOrDiscarded(slot, keepUnit, out unitKept))
        {
            return false;
        }

        if (!hinted)
        {
            hints.Hint(slot.Index, _maxHints);
        }

        return true;
    }

    /// <summary>
    /// Runs <see cref="CleanUp"/>, or <see cref="IResettable.TryReset"/>, on a returning slot; if it
    /// throws, discards the slot and rethrows; if the reset fails, discards the slot and returns false.
    /// </summary>
    private bool CleanUpOrDiscard(PoolSlot<T> slot)
    {
        bool reset = true;
        try
        {
            if (_resetsObjects)
            {
                reset = ((IResettable)slot.Object).TryReset();
            }
            else
            {
                CleanUp(slot.Object);
            }
        }
        catch (Exception failure)
        {
            DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
            throw;
        }

        if (!reset)
        {
            Discard(slot, PoolMetrics.DiscardReason.ResetFailed);
        }

        return reset;
    }

    private T Construct()
    {
        long start = PoolMetrics.CreateTimeEnabled ? _time.GetTimestamp() : 0;
        T @object = ObjectConstructor() ?? throw new InvalidOperationException($"The pool '{_name}' got null from {nameof(ObjectConstructor)} (or the factory given to Pool.Create).");
        if (start != 0)
        {
            PoolMetrics.Constructed(_name, _time.GetElapsedTime(start));
        }

        return @object;
    }

    /// <summary>Makes an object and its slot, rented, with one unit of the cap the caller already holds.</summary>
    private PoolSlot<T> CreateSlot()
    {
        // A Clear that begins while the object is made cannot see it: the registration retires it then.
        int retirements = _registry.Retirements;
        T @object;
        try
        {
            @object = Construct();
        }
        catch
        {
            ReturnUnit();
            throw;
        }

        var slot = new PoolSlot<T>(this, @object) { History = _maintenance?.NewHistory() };
        try
        {
            _registry.Add(slot, retirements);
        }
        catch
        {
            (@object as IDisposable)?.Dispose();
            ReturnUnit();
            throw;
        }

        try
        {
            HoldSlotInObject(@object, slot);
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

        PoolMetrics.Created(_name);
        return slot;
    }

    /// <summary>
    /// Makes an object for a taker with one unit of the cap the caller already holds, and starts its rental; null
    /// if maintenance took the new rental back as abandoned while <see cref="HoldSlotInObject"/> ran (its object
    /// discarded, its unit given back).
    /// </summary>
    private PoolSlot<T>? CreateRentedSlot(ThreadHints<T> hints)
    {
        PoolSlot<T> slot = CreateSlot();
        if (!slot.IsRented)
        {
            return null;
        }

        hints.Hint(slot.Index, _maxHints);
        return slot;
    }

    /// <summary>
    /// Disposes the object of a slot the caller owns (rented or returning, never idle) and, unless
    /// <paramref name="returnUnit"/> is <see langword="false"/>, gives its place under the cap back,
    /// even if the object's Dispose throws.
    /// </summary>
    /// <param name="slot">The slot.</param>
    /// <param name="reason">Why, for the discarded-objects counter; <see langword="null"/> for an object never counted as created.</param>
    /// <param name="returnUnit">Whether the place under the cap goes back to the pool, or stays with the caller.</param>
    private void Discard(PoolSlot<T> slot, PoolMetrics.DiscardReason? reason, bool returnUnit = true)
    {
        slot.MarkDiscarded();
        try
        {
            IdleSlotStacks<T>.Remove(slot);
            _registry.Remove(slot);
            if (reason is { } counted)
            {
                PoolMetrics.Discarded(_name, counted);
            }

            (slot.Object as IDisposable)?.Dispose();
        }
        finally
        {
            if (returnUnit)
            {
                ReturnUnit();
            }
        }
    }

    /// <summary>
    /// Discards a slot whose object just failed in user code with <paramref name="failure"/>, which
    /// the caller rethrows; if the object's Dispose throws too, both leave together instead.
    /// </summary>
    private void DiscardAfterFailure(PoolSlot<T> slot, Exception failure, PoolMetrics.DiscardReason? reason)
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
    /// abandoned meanwhile: one compare-and-swap decides which of them discards it. A taker that keeps the place
    /// under the cap gives it back after all if the object's Dispose throws, since that exception ends the take.
    /// </summary>
    /// <returns>Whether the caller holds the place under the cap: only if it asked to, and the take discarded it.</returns>
    private bool DiscardRefused(PoolSlot<T> slot, PoolMetrics.DiscardReason reason, bool keepUnit)
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
            ReturnUnit();
            throw;
        }

        return keepUnit;
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
    /// <paramref name="disposing"/> for <see cref="Dispose()"/>, which must also meet the slots still being returned.
    /// Runs no user code, unless the pool is disposed meanwhile (see <see cref="Store"/>).
    /// </summary>
    private void ClaimIdle(int keep, bool retiredOnly, long? idleSince, bool disposing, ref List<PoolSlot<T>>? claimed, ref List<Exception>? failures)
    {
        int excess = keep == 0 ? int.MaxValue : AvailableCount - keep;
        bool sawReturning = false;
        for (int pass = 0; pass < 2 && excess > 0; pass++)
        {
            foreach (PoolSlot<T>? slot in _registry.Slots)
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

                // Taken and returned between the look and the claim: idle only from then, so it stays (unless the pool
                // was disposed meanwhile, and its Dispose throws).
                if (!IdleSince(slot, idleSince))
                {
                    try
                    {
                        Store(slot);
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
                Discard(slot, reason == PoolMetrics.DiscardReason.Trimmed && !retiredOnly && slot.IsRetired ? PoolMetrics.DiscardReason.Expired : reason);
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

    private void ReturnUnit()
    {
        _allocationBudget.Release();

        // The release was a full fence: a waiter that queued before it is seen here and gets the unit.
        if (_waiters.Count != 0)
        {
            bool unused = false;
            _waiters.Serve(this, released: null, scan: false, ref unused);
        }
    }

    bool TakeWaiters<T>.ISupply.TryClaimIdle(PoolSlot<T>? released, bool scan, [NotNullWhen(true)] out PoolSlot<T>? slot, ref bool sawReturning)
    {
        if ((released is not null && released.TryClaimIdle() && (slot = released) is not null)
            || (scan && _idleStacks.TryTake(out slot, lookEverywhere: true, ref sawReturning)))
        {
            return true;
        }

        slot = null;
        return false;
    }

    bool TakeWaiters<T>.ISupply.TryTakeUnit() => _allocationBudget.TryTake();

    private void ThrowIfDisposed()
    {
        if (_waiters.IsDisposed)
        {
            ThrowDisposed();
        }
    }

    // Named as the user named the pool (by default its type, or Pool<T> for Pool.Create), never an internal type.
    private ObjectDisposedException NewDisposedException() => new(_name);

    /// <summary>Checks the cap given to the constructor that takes only it, under that parameter's name.</summary>
    private static PoolOptions ValidMaxCapacity(int maxCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxCapacity, 1);
        return new PoolOptions { MaxCapacity = maxCapacity };
    }

    /// <summary>Gets a type's name as C# writes it: <c>Pool&lt;StringBuilder&gt;</c> rather than <c>Pool`1</c>.</summary>
    private protected static string DisplayName(Type type)
    {
        if (!type.IsGenericType)
        {
            return type.Name;
        }

        string name = type.Name;
        int tick = name.IndexOf('`', StringComparison.Ordinal);
        return $"{(tick < 0 ? name : name[..tick])}<{string.Join(", ", type.GetGenericArguments().Select(DisplayName))}>";
    }

    /// <summary>Rethrows the one failure as it is, or several in an <see cref="AggregateException"/>; nothing if none.</summary>
    [StackTraceHidden]
    private static void ThrowIfAny(List<Exception>? failures)
    {
        if (failures is null)
        {
            return;
        }

        if (failures.Count == 1)
        {
            ExceptionDispatchInfo.Throw(failures[0]);
        }

        throw new AggregateException(failures);
    }

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private void ThrowDisposed() => throw NewDisposedException();

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowForeignSlot(string paramName) =>
        throw new ArgumentException("The slot belongs to another pool.", paramName);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowSlotAlreadyReturned() =>
        throw new InvalidOperationException("The slot was already returned: it was released or disposed twice, or rented again since.");

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowTimeoutOutOfRange(string paramName) =>
        throw new ArgumentOutOfRangeException(paramName, "The timeout must be Timeout.InfiniteTimeSpan or from zero to int.MaxValue milliseconds.");
}
