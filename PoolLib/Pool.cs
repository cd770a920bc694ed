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
    // The cap: its count is the units not in use; a unit is taken for each object made, and given back with it.
    private readonly LockFreeSemaphore _cap;
    private readonly SlotRegistry<T> _registry = new();
    private readonly ThreadHintTable<T> _hints;
    private readonly IdleSlotStacks<T> _idleStacks = new();
    private readonly TakeWaiters<T> _waiters = new();

    // The mechanisms off the fast paths, each with its own state.
    private readonly SlotLifecycle<T> _lifecycle;
    private readonly WaitingTakes<T> _waiting;
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
    private readonly bool _tracksIdleTime;
    private readonly bool _resetsObjects;
    private readonly bool _releasesSlowly;

    /// <summary>Initialises a pool that never holds more than <paramref name="maxCapacity"/> objects at once.</summary>
    /// <param name="maxCapacity">The cap on objects alive at once (idle plus rented); at least 1.</param>
    /// <exception cref="ArgumentOutOfRangeException"><paramref name="maxCapacity"/> is less than 1.</exception>
    /// <remarks>No object is created here; call <see cref="TryAllocatePush(int)"/> to pre-warm.</remarks>
    protected Pool(int maxCapacity)
        : this(PoolOptions.ForCapacity(maxCapacity))
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
        _cap = new LockFreeSemaphore(options.MaxCapacity, options.MaxCapacity);
        _name = options.Name ?? defaultName ?? DisplayName(GetType());
        _time = options.TimeProvider ?? TimeProvider.System;
        _maxHints = (int)Math.Min(1 << 16, BitOperations.RoundUpToPowerOf2((uint)options.MaxCapacity));
        int leakSamplingInterval = options.LeakDetectionThreshold is null ? 0 : options.LeakSamplingInterval;
        _samplesLeaks = leakSamplingInterval != 0;
        _hints = new ThreadHintTable<T>(leakSamplingInterval);
        _maintenance = PoolMaintenance<T>.Create(this, options);
        _idleValidation = options.ValidateAfterIdle is { } idle ? new IdleValidation<T>(this, _time, idle) : null;
        _tracksIdleTime = _maintenance?.TracksIdleTime ?? false;
        _resetsObjects = resetsObjects;
        _releasesSlowly = _tracksIdleTime | resetsObjects | _idleValidation is not null;

        // Which of the two constructors the subclass overrides decides how the pool creates: the delegates bind to the overrides.
        Func<CancellationToken, ValueTask<T>> constructAsync = ObjectConstructorAsync;
        Func<T> construct = ObjectConstructor;
        _createsAsynchronously = constructAsync.Method.DeclaringType != typeof(Pool<T>);
        if (!_createsAsynchronously && construct.Method.DeclaringType == typeof(Pool<T>))
        {
            throw new NotSupportedException($"The pool '{_name}' overrides neither {nameof(ObjectConstructor)} nor {nameof(ObjectConstructorAsync)}: it has no way to make an object.");
        }

        _lifecycle = new SlotLifecycle<T>(this, construct, constructAsync, _createsAsynchronously, _time, stampsReleases: _idleValidation is not null);
        _waiting = new WaitingTakes<T>(this, leakSamplingInterval);
        _trimmer = new PoolTrimmer<T>(this, options.MinIdle);
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
    public int MaxCapacity => _cap.MaxCount;

    /// <summary>Gets how many objects exist: created and not yet discarded, idle or rented.</summary>
    /// <remarks>Never greater than <see cref="MaxCapacity"/>. A snapshot under concurrent use.</remarks>
    public int TotalCount => _cap.MaxCount - _cap.CurrentCount;

    /// <summary>Gets how many objects are idle in the pool right now.</summary>
    /// <remarks>
    /// Costs a read per object that exists; no take or release pays to keep a count. Exact when no take
    /// or release is in flight; under concurrent use a snapshot, never greater than <see cref="TotalCount"/>.
    /// </remarks>
    public int AvailableCount => Math.Min(_registry.CountIdle(), TotalCount);

    /// <summary>Gets how many takers are waiting for an object.</summary>
    public int WaiterCount => _waiters.Count;

    // For the internal types that hold the mechanisms off the fast paths.
    internal SlotRegistry<T> Registry => _registry;

    internal ThreadHintTable<T> Hints => _hints;

    internal TakeWaiters<T> Waiters => _waiters;

    internal SlotLifecycle<T> Lifecycle => _lifecycle;

    internal PoolTrimmer<T> Trimmer => _trimmer;

    internal PoolMaintenance<T>? Maintenance => _maintenance;

    internal PoolCreator<T>? Creator => _creator;

    internal bool CreatesAsynchronously => _createsAsynchronously;

    internal bool IsDisposed => _waiters.IsDisposed;

    internal int FreeUnits => _cap.CurrentCount;

    internal bool TryTakeUnit() => _cap.TryTake();

    internal EventHandler<PoolLeakEventArgs>? LeakHandlers(bool returned) => returned ? LeakedRentalReturned : RentalLeakSuspected;

    internal void HoldSlot(T @object, PoolSlot<T> slot) => HoldSlotInObject(@object, slot);

    internal ValueTask<bool> CheckHealthAsync(T @object, CancellationToken cancellationToken) => ValidateAsync(@object, cancellationToken);

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
        if ((timeout < TimeSpan.Zero && timeout != Timeout.InfiniteTimeSpan) || timeout.TotalMilliseconds > int.MaxValue)
        {
            PoolThrowHelper.ThrowTimeoutOutOfRange(nameof(timeout));
        }

        long deadline = timeout == Timeout.InfiniteTimeSpan ? long.MaxValue : start + (long)(timeout.TotalSeconds * Stopwatch.Frequency);
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
            _lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
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
            PoolThrowHelper.ThrowForeignSlot(nameof(slot));
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
    /// <exception cref="NotSupportedException">Not overridden: a pool overrides this or <see cref="ObjectConstructorAsync"/>.</exception>
    /// <remarks>
    /// May run on several threads at once, on the taker's thread. If it throws, the place under the cap is given back and
    /// the exception reaches the taker; returning <see langword="null"/> throws <see cref="InvalidOperationException"/>.
    /// </remarks>
    protected virtual T ObjectConstructor() =>
        throw new NotSupportedException($"The pool '{_name}' makes its objects with {nameof(ObjectConstructorAsync)}.");

    /// <summary>
    /// Makes one new object asynchronously, for example a connection. A pool whose class overrides this creates in
    /// the background, never on a taker's thread; see <see cref="PoolOptions.MaxConcurrentCreations"/>.
    /// </summary>
    /// <param name="cancellationToken">Cancelled at <see cref="PoolOptions.CreateTimeout"/>, or when the pool is disposed.</param>
    /// <returns>The new object; never <see langword="null"/>.</returns>
    /// <remarks>
    /// The default calls <see cref="ObjectConstructor"/>. Creations are tied to no taker: each object serves the oldest
    /// waiter, or goes idle. A failure fails the oldest waiter that needs a creation with this method's exception (or a
    /// <see cref="TimeoutException"/> at the timeout), and the pool backs off before it tries again: during the
    /// back-off a take that needs a creation fails at once with the same exception, and one that a release can serve waits.
    /// </remarks>
    protected virtual ValueTask<T> ObjectConstructorAsync(CancellationToken cancellationToken) => new(ObjectConstructor());

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

    /// <summary>
    /// Says whether an object idle longer than <see cref="PoolOptions.ValidateAfterIdle"/> may still be handed out,
    /// checking it in a way that may take a round trip (a ping); called by <see cref="TakeSlotAsync"/> only.
    /// </summary>
    /// <param name="object">The idle object about to be handed to the taker.</param>
    /// <param name="cancellationToken">The take's token.</param>
    /// <returns><see langword="false"/> to discard the object; the take then goes on with another idle object or a new one.</returns>
    /// <remarks>
    /// Runs after <see cref="Validate"/>, on the object rented to the taking call. If it throws, the object is discarded and the
    /// exception reaches the taker, but for an <see cref="OperationCanceledException"/> of the take's token, which
    /// puts the object back idle. The default returns <see langword="true"/>.
    /// </remarks>
    protected virtual ValueTask<bool> ValidateAsync(T @object, CancellationToken cancellationToken) => new(true);

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
        if (!_cap.TryTake())
        {
            return false;
        }

        _lifecycle.StoreNew(_lifecycle.CreateSlot());
        return true;
    }

    /// <summary>
    /// Begins keeping <see cref="PoolOptions.MinIdle"/> objects idle now, where the pool fills it (see
    /// <see cref="PoolOptions.FillMinIdle"/>), instead of at the first take that finds nothing idle.
    /// </summary>
    /// <remarks>Call it at the end of a subclass's constructor, once what the constructors read is set; calling it again does nothing.</remarks>
    protected void StartFillingMinIdle() => _creator?.StartFilling();

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
        int trimmed = _trimmer.TrimToMinIdle(idleSince: null, ref failures);
        PoolThrowHelper.ThrowIfAny(failures);
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
        _trimmer.DiscardIdle(PoolMetrics.DiscardReason.Trimmed, keep: 0, retiredOnly: true, idleSince: null, ref failures);
        PoolThrowHelper.ThrowIfAny(failures);
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
            _trimmer.DiscardIdle(PoolMetrics.DiscardReason.Disposed, keep: 0, retiredOnly: false, idleSince: null, ref failures);
            PoolThrowHelper.ThrowIfAny(failures);
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

    /// <summary>Makes an object that the pool neither counts nor keeps; for callers that must not wait (see <see cref="ObjectPoolAdapter{T}"/>).</summary>
    internal T CreateUnpooled()
    {
        ThrowIfDisposed();
        return _lifecycle.Construct();
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
        _lifecycle.Discard(slot, _waiters.IsDisposed ? PoolMetrics.DiscardReason.Disposed : PoolMetrics.DiscardReason.Discarded);
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
        if (_creator is not null)
        {
            _creator.StartFilling();
            if (_createsAsynchronously)
            {
                // Made in the background, for the oldest waiter: this taker waits (or does not) as any other.
                return null;
            }
        }

        if (!_cap.TryTake())
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

            _lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.Invalid);
            throw;
        }

        if (!valid)
        {
            unitKept = _lifecycle.DiscardRefused(slot, PoolMetrics.DiscardReason.Invalid, keepUnit);
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
            _lifecycle.Discard(slot, PoolMetrics.DiscardReason.Expired);
            return;
        }

        if (_tracksIdleTime)
        {
            // Idle from now: the idle sweep stamps it the first time it finds it in the pool.
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        _idleValidation?.StampRelease(slot);

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
            PoolThrowHelper.ThrowSlotAlreadyReturned();
        }

        PoolMetrics.ReleasedLate(_name);
    }

    /// <summary>Notes when a rental began, for the use-time histogram; only while a listener has it on.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal void BeginUse(PoolSlot<T> slot)
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
    internal void StoreAgain(PoolSlot<T> slot)
    {
        if (_tracksIdleTime)
        {
            Volatile.Write(ref slot.History!.IdleSince, 0);
        }

        Store(slot);
    }

    /// <summary>Makes a returning slot idle, then does what its publication owes: an entry, a waiter served, a discard after Dispose.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal void Store(PoolSlot<T> slot)
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
            _lifecycle.Discard(slot, PoolMetrics.DiscardReason.Disposed);
        }
    }

    /// <summary>Any idle object, else a new one within the cap; never waits and never goes ahead of a waiter.</summary>
    internal bool TryTakeWithoutWaiting([NotNullWhen(true)] out PoolSlot<T>? slot)
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
    internal bool TryAccept(PoolSlot<T> slot, ThreadHints<T> hints, bool hinted, bool keepUnit, out bool unitKept)
    {
        if (slot.IsRetired)
        {
            unitKept = _lifecycle.DiscardRefused(slot, PoolMetrics.DiscardReason.Expired, keepUnit);
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
            _lifecycle.DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.CleanUpFailed);
            throw;
        }

        if (!reset)
        {
            _lifecycle.Discard(slot, PoolMetrics.DiscardReason.ResetFailed);
        }

        return reset;
    }

    /// <summary>
    /// Makes an object for a taker with one unit of the cap the caller already holds, and starts its rental; null
    /// if maintenance took the new rental back as abandoned while <see cref="HoldSlotInObject"/> ran (its object
    /// discarded, its unit given back).
    /// </summary>
    internal PoolSlot<T>? CreateRentedSlot(ThreadHints<T> hints)
    {
        PoolSlot<T> slot = _lifecycle.CreateSlot();
        if (!slot.IsRented)
        {
            return null;
        }

        hints.Hint(slot.Index, _maxHints);
        return slot;
    }

    /// <summary>Gives a unit of the cap back: to a waiter, or to a background creation, if one needs it.</summary>
    internal void ReturnUnit()
    {
        _cap.Release();

        // The release was a full fence: a waiter that queued before it is seen here and gets the unit.
        if (_waiters.Count != 0)
        {
            bool unused = false;
            _waiters.Serve(this, released: null, scan: false, ref unused);
        }

        _creator?.Pump();
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

    // An asynchronous pool's waiters are served by its creations, never handed a unit to make an object with.
    bool TakeWaiters<T>.ISupply.TryTakeUnit() => !_createsAsynchronously && _cap.TryTake();

    private void ThrowIfDisposed()
    {
        if (_waiters.IsDisposed)
        {
            ThrowDisposed();
        }
    }

    // Named as the user named the pool (by default its type, or Pool<T> for Pool.Create), never an internal type.
    internal ObjectDisposedException NewDisposedException() => new(_name);

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

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    internal void ThrowDisposed() => throw NewDisposedException();
}
