using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Numerics;
using System.Runtime.CompilerServices;
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
public abstract partial class Pool<T> : IDisposable, PoolMetrics.IObservedPool where T : class
{
    // The cap: its count is the units not in use; a unit is taken for each object made, and given back with it.
    private readonly LockFreeSemaphore _cap;
    private readonly SlotRegistry<T> _registry = new();
    private readonly ThreadHintTable<T> _hints;
    private readonly IdleSlotStacks<T> _idleStacks = new();
    private readonly TakeWaiters<T> _waiters = new();

    // The mechanisms off the fast paths, each with its own state.
    private readonly SlotLifecycle<T> _lifecycle;
    private readonly WaitingTakes<T> _waiting;
    private readonly SlowReleases<T> _releases;
    private readonly SlotClaims<T> _claims;
    private readonly PoolTrimmer<T> _trimmer;
    private readonly PoolMaintenance<T>? _maintenance;
    private readonly PoolCreator<T>? _creator;
    private readonly IdleValidation<T>? _idleValidation;

    private readonly string _name;
    private readonly TimeProvider _time;
    private readonly bool _createsAsynchronously;

    // No thread needs hints for more slots than the cap.
    private readonly int _maxHints;

    // Whether a take may be sampled for leak detection (see ThreadHints.CountDownToLeakSample).
    private readonly bool _samplesLeaks;

    // Whether a release does more than its fast path: it resets idle time, stamps it, or calls IResettable.TryReset.
    private readonly bool _releasesSlowly;

    /// <summary>The constructor every other one calls.</summary>
    /// <param name="options">The options, checked here.</param>
    /// <param name="defaultName">Replaces the type's name as the default name.</param>
    /// <param name="resetsObjects">Whether a release calls the object's <see cref="IResettable.TryReset"/> instead of <see cref="CleanUp"/>.</param>
    private protected Pool(PoolOptions options, string? defaultName, bool resetsObjects)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        _cap = new LockFreeSemaphore(options.MaxCapacity, options.MaxCapacity);
        _name = options.Name ?? defaultName ?? TypeNames.Display(GetType());
        _time = options.TimeProvider ?? TimeProvider.System;
        _maxHints = (int)Math.Min(1 << 16, BitOperations.RoundUpToPowerOf2((uint)options.MaxCapacity));
        int leakSamplingInterval = options.LeakDetectionThreshold is null ? 0 : options.LeakSamplingInterval ?? LeakSampleCountdown.Adaptive;
        _samplesLeaks = leakSamplingInterval != 0;
        _hints = new ThreadHintTable<T>(leakSamplingInterval);
        _maintenance = PoolMaintenance<T>.Create(this, options);
        _idleValidation = options.ValidateAfterIdle is { } idle ? new IdleValidation<T>(this, _time, idle) : null;
        bool tracksIdleTime = _maintenance?.TracksIdleTime ?? false;
        _releasesSlowly = tracksIdleTime | resetsObjects | _idleValidation is not null;

        // Which of the two constructors the subclass overrides decides how the pool creates: the delegates bind to the overrides.
        Func<CancellationToken, ValueTask<T>> constructAsync = ObjectConstructorAsync;
        Func<T> construct = ObjectConstructor;
        _createsAsynchronously = SlotLifecycle<T>.CreatesAsynchronously(construct, constructAsync, _name);

        _lifecycle = new SlotLifecycle<T>(this, construct, constructAsync, _createsAsynchronously, _time, stampsReleases: _idleValidation is not null);
        _waiting = new WaitingTakes<T>(this, _samplesLeaks);
        _releases = new SlowReleases<T>(this, _time, tracksIdleTime, resetsObjects);
        _trimmer = new PoolTrimmer<T>(this, options.MinIdle);
        _claims = new SlotClaims<T>(this);
        if (_createsAsynchronously || options.FillMinIdle == true)
        {
            _creator = new PoolCreator<T>(this, options, servesWaiters: _createsAsynchronously, fillsMinIdle: options.FillMinIdle ?? true);
        }

        PoolMetrics.Track(this);
    }

    /// <summary>
    /// Raised, once per rental, when an object has been rented for longer than
    /// <see cref="PoolOptions.LeakDetectionThreshold"/>; never raised while that option is off.
    /// </summary>
    /// <remarks>
    /// Raised on the maintenance timer's thread, up to two ticks after the threshold, never before; the rental goes on.
    /// Handlers run one at a time, in the order the leaks were found, after the tick's sweep: one that blocks holds up
    /// later events, not the timer. What a handler throws is dropped, so that the other handlers run.
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
    public int MaxCapacity => _cap.MaxCount;

    /// <summary>Gets how many objects exist: created and not yet discarded, idle or rented.</summary>
    /// <remarks>Never greater than <see cref="MaxCapacity"/>. A snapshot under concurrent use.</remarks>
    public int TotalCount => _cap.MaxCount - _cap.CurrentCount;

    /// <summary>Gets how many objects are idle in the pool right now.</summary>
    /// <remarks>
    /// Costs a read per thread that has used the pool, whatever the number of objects; each thread keeps its own
    /// count, so no take or release writes a line another thread writes for it. Exact when no take or release is in
    /// flight; under concurrent use a snapshot, never negative nor greater than <see cref="TotalCount"/>.
    /// </remarks>
    public int AvailableCount => (int)Math.Clamp(_hints.SumIdleBalances(), 0, TotalCount);

    /// <summary>Gets how many takers are waiting for an object.</summary>
    public int WaiterCount => _waiters.Count;

    // For the internal types that hold the mechanisms off the fast paths.
    internal SlotRegistry<T> Registry => _registry;
    internal ThreadHintTable<T> Hints => _hints;
    internal IdleSlotStacks<T> IdleStacks => _idleStacks;
    internal TakeWaiters<T> Waiters => _waiters;
    internal LockFreeSemaphore Cap => _cap;
    internal int MaxHints => _maxHints;
    internal SlotLifecycle<T> Lifecycle => _lifecycle;
    internal SlotClaims<T> Claims => _claims;
    internal WaitingTakes<T> Waiting => _waiting;
    internal SlowReleases<T> Releases => _releases;
    internal PoolTrimmer<T> Trimmer => _trimmer;
    internal PoolMaintenance<T>? Maintenance => _maintenance;
    internal PoolCreator<T>? Creator => _creator;
    internal IdleValidation<T>? IdleValidation => _idleValidation;
    internal bool CreatesAsynchronously => _createsAsynchronously;
    internal TimeProvider Time => _time;
    internal bool IsDisposed => _waiters.IsDisposed;
    internal int FreeUnits => _cap.CurrentCount;
    internal bool TryTakeUnit() => _cap.TryTake();
    internal void ReturnUnit() => _waiting.ReturnUnit();
    internal EventHandler<PoolLeakEventArgs>? LeakHandlers(bool returned) => returned ? LeakedRentalReturned : RentalLeakSuspected;
    /// <summary>A take on the fast path, else on the slow one, with no health check after idle.</summary>
    internal ValueTask<PoolSlot<T>> TakeUncheckedAsync(CancellationToken cancellationToken) =>
        TakeFast(out _) is { } slot ? new ValueTask<PoolSlot<T>>(slot) : _waiting.TakeAsync(cancellationToken);

    /// <summary>Takes an object, waiting as long as it takes while the pool is exhausted.</summary>
    /// <returns>The slot of the rented object; dispose it or pass it to <see cref="Release(PoolSlot{T})"/> to return it.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    /// <remarks>Any exception from <see cref="ObjectConstructor"/> or <see cref="Validate"/> reaches the caller; the cap is untouched by it.</remarks>
    public PoolSlot<T> TakeSlot() => TakeFast(out _) ?? _waiting.Take(start: 0, deadline: long.MaxValue)!;

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
        slot = TakeFast(out bool foundNone) ?? (foundNone ? null : _waiting.Take(start: 0, deadline: 0));
        if (slot is null && _createsAsynchronously)
        {
            // Nothing idle: a creation for the next taker, if none is under way for it.
            _creator!.Pump(extra: 1);
        }

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
        long deadline = WaitingTakes<T>.Deadline(start, timeout, nameof(timeout));
        slot = TakeFast(out _) ?? _waiting.Take(start, deadline);
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

        if (_idleValidation is { } check)
        {
            return slot is not null && !check.IsIdleTooLong(slot) ? new ValueTask<PoolSlot<T>>(slot) : check.TakeCheckedAsync(slot, cancellationToken);
        }

        return slot is not null ? new ValueTask<PoolSlot<T>>(slot) : _waiting.TakeAsync(cancellationToken);
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
            PoolThrowHelper.ThrowForeignSlot(nameof(slot));
        }

        if (!slot.TryBeginReturn())
        {
            _releases.Refuse(slot, rental: -1);
            return;
        }

        EndRental(slot);
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
            PoolThrowHelper.ThrowForeignSlot(nameof(slot));
        }

        if (!slot.TryBeginReturn(rental))
        {
            _releases.Refuse(slot, rental);
            return;
        }

        EndRental(slot);
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
        return _trimmer.Trim();
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
        _trimmer.Clear();
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
            _trimmer.DisposeIdle();
        }
        finally
        {
            try
            {
                _creator?.Dispose();
                _maintenance?.Dispose();
            }
            finally
            {
                PoolMetrics.Untrack(this);
            }
        }
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
            || (_samplesLeaks && hints.CountDownToLeakSample()))
        {
            return null;
        }

        PoolSlot<T>? slot;
        if (!hints.TryTake(_registry.Array, out slot))
        {
            slot = _claims.TakeIdleOrNew(hints, out bool refused);
            foundNone = slot is null && !refused;
        }
        else if (slot.IsRetired ? !_claims.TryAccept(slot, hints, hinted: true, keepUnit: false, out _) : !_claims.IsValidOrDiscarded(slot, keepUnit: false, out _))
        {
            // Refused (retired or invalid, and discarded): the slow path looks further.
            slot = null;
        }

        if (slot is not null && PoolMetrics.UseTimeEnabled)
        {
            slot.StampUse(_time);
        }

        return slot;
    }

    /// <summary>
    /// Ends a rental whose return the caller has claimed: cleans the object up and stores it, or, for a release that owes
    /// more (see <see cref="SlowReleases{T}"/>), leaves it to the slow path.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void EndRental(PoolSlot<T> slot)
    {
        if (_releasesSlowly | slot.NeedsCareOnRelease)
        {
            _releases.End(slot);
            return;
        }

        try
        {
            CleanUp(slot.Object);
        }
        catch (Exception failure)
        {
            _lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
            throw;
        }

        Store(slot);
    }

    /// <summary>Makes a returning slot idle, then does what its publication owes: an entry, a waiter served, a discard after Dispose.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal void Store(PoolSlot<T> slot)
    {
        slot.Publish();
        _hints.Current.CountIdle(1);
        if (slot.Stack is null || !_waiters.IsQuietAndLive)
        {
            _releases.AfterPublish(slot);
        }
    }

    private void ThrowIfDisposed()
    {
        if (_waiters.IsDisposed)
        {
            ThrowDisposed();
        }
    }

    // Named as the user named the pool (by default its type, or Pool<T> for Pool.Create), never an internal type.
    internal ObjectDisposedException NewDisposedException() => new(_name);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    internal void ThrowDisposed() => throw NewDisposedException();
}
