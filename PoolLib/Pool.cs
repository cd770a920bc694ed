using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using PoolLib.Internal;

namespace PoolLib;

/// <summary>
/// A thread-safe pool of objects that are expensive to create, with a hard cap on how many exist at
/// once. Subclasses say how to make an object (<see cref="ObjectConstructor"/>) and, optionally,
/// how to reset it (<see cref="CleanUp"/>) and where it keeps its slot (<see cref="HoldSlotInObject"/>).
/// </summary>
/// <typeparam name="T">The pooled type.</typeparam>
/// <remarks>
/// <para>
/// A take hands out a <see cref="PoolSlot{T}"/>: an idle object if there is one; otherwise a new one
/// if fewer than <see cref="MaxCapacity"/> exist; otherwise the taker waits until a release hands it
/// one. Waiters are served first-come first-served, and while any taker waits no new taker goes
/// ahead of it. Waiting is event-driven: a blocking taker spins briefly before it queues, and then
/// sleeps until a release wakes it; nothing polls.
/// </para>
/// <para>
/// Every member is safe to call from any number of threads at once. <see cref="CleanUp"/> runs on
/// the releasing thread before the object is visible to another taker; <see cref="ObjectConstructor"/>
/// and <see cref="HoldSlotInObject"/> run on the taking (or pre-warming) thread, never under a lock.
/// </para>
/// <para>
/// Capacity never leaks: an object whose construction, slot hand-over or clean-up throws is
/// discarded (disposed if it is <see cref="IDisposable"/>), its place under the cap is given back,
/// and the exception reaches the caller. An interrupt (<see cref="Thread.Interrupt"/>) ends only a
/// wait for an object; it never stops the pool halfway through storing, creating or discarding one.
/// </para>
/// <para>
/// After <see cref="Dispose()"/>, takes throw <see cref="ObjectDisposedException"/>, waiters are
/// woken with it, idle objects are disposed, and objects still rented are disposed when released.
/// </para>
/// </remarks>
// The non-public methods are kept for trimming so that the constructor can tell whether Validate is overridden.
[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.NonPublicMethods)]
public abstract partial class Pool<T> : IDisposable, PoolMetrics.IObservedPool where T : class
{
    // Bits of _takeChecks and _releaseChecks: what a take or release must do beyond the fast path.
    // A pool with no feature on has both at 0, and pays one load and one branch for each.
    private const int ValidateOnTake = 1;
    private const int TrackRentals = 2;
    private const int EnforceLifetime = 4;
    private const int TrackIdleTime = 8;
    private const int DiscardCleared = 16;

    private readonly LockFreeSemaphore _allocationBudget;
    private readonly SlotStorage<T> _storage = new();
    private readonly string _name;
    private readonly TimeProvider _timeProvider;

    // In TimeProvider timestamp units; 0 where the option is off.
    private readonly long _maxObjectLifetime;
    private readonly long _idleTimeout;
    private readonly long _leakDetectionThreshold;
    private readonly int _minIdle;

    // Each gains DiscardCleared with the first Clear, and keeps it; otherwise fixed at construction.
    private int _takeChecks;
    private int _releaseChecks;

    // How many times Clear has run; a slot made before the last Clear has an older value.
    private int _generation;

    // 1 once Dispose has started; makes Dispose run once.
    private int _disposeStarted;

    // 0 while the pool is live, 1 once Dispose has closed the storage's foreign-access gate for
    // good (so whoever reads 1 may take from any thread's cache); set with Interlocked.Exchange.
    private int _disposed;

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

    /// <summary>The constructor every other one calls; <paramref name="defaultName"/> replaces the type's name as the default.</summary>
    private protected Pool(PoolOptions options, string? defaultName)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentOutOfRangeException.ThrowIfLessThan(options.MaxCapacity, 1, OptionName(nameof(PoolOptions.MaxCapacity)));
        ArgumentOutOfRangeException.ThrowIfNegative(options.MinIdle, OptionName(nameof(PoolOptions.MinIdle)));
        ArgumentOutOfRangeException.ThrowIfGreaterThan(options.MinIdle, options.MaxCapacity, OptionName(nameof(PoolOptions.MinIdle)));
        if (options.Name is { } name && string.IsNullOrWhiteSpace(name))
        {
            throw new ArgumentException("The pool's name must not be empty or white space.", OptionName(nameof(PoolOptions.Name)));
        }

        _timeProvider = options.TimeProvider ?? TimeProvider.System;
        _maxObjectLifetime = Timestamps(options.MaxObjectLifetime, nameof(PoolOptions.MaxObjectLifetime));
        _idleTimeout = Timestamps(options.IdleTimeout, nameof(PoolOptions.IdleTimeout));
        _leakDetectionThreshold = Timestamps(options.LeakDetectionThreshold, nameof(PoolOptions.LeakDetectionThreshold));
        _minIdle = options.MinIdle;
        _allocationBudget = new LockFreeSemaphore(options.MaxCapacity, options.MaxCapacity);
        _name = options.Name ?? defaultName ?? DisplayName(GetType());

        _takeChecks = (OverridesValidate() ? ValidateOnTake : 0) | (_leakDetectionThreshold != 0 ? TrackRentals : 0);
        _releaseChecks = (_maxObjectLifetime != 0 ? EnforceLifetime : 0) | (_idleTimeout != 0 ? TrackIdleTime : 0);

        PoolMetrics.Track(this);
        StartMaintenance(options);
    }

    /// <summary>Gets the pool's name, as metrics and leak reports show it: <see cref="PoolOptions.Name"/>, or the pool type's name.</summary>
    public string Name => _name;

    /// <summary>Gets the cap on objects alive at once, idle and rented together.</summary>
    public int MaxCapacity => _allocationBudget.MaxCount;

    /// <summary>Gets how many objects exist: created and not yet discarded, idle or rented.</summary>
    /// <remarks>Never greater than <see cref="MaxCapacity"/>. A snapshot under concurrent use.</remarks>
    public int TotalCount => _allocationBudget.MaxCount - _allocationBudget.CurrentCount;

    /// <summary>Gets how many objects are idle in the pool right now.</summary>
    /// <remarks>
    /// Costs a few reads per thread that has used the pool, whatever the pool's size. Exact when no
    /// take or release is in flight; under concurrent use a snapshot, which is never greater than
    /// <see cref="TotalCount"/> (a slot moving between a thread's cache and the shared stack during
    /// the read could otherwise be counted twice).
    /// </remarks>
    public int AvailableCount => Math.Min(_storage.Count, TotalCount);

    int PoolMetrics.IObservedPool.WaiterCount => WaiterCount;

    /// <summary>Gets how many slots storage holds, uncapped; for tests that check nothing is stored twice.</summary>
    internal int StoredCount => _storage.Count;

    /// <summary>Takes an object, waiting as long as it takes while the pool is exhausted.</summary>
    /// <returns>The slot of the rented object; dispose it or pass it to <see cref="Release(PoolSlot{T})"/> to return it.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    /// <remarks>Any exception from <see cref="ObjectConstructor"/> reaches the caller; the cap is untouched by it.</remarks>
    public PoolSlot<T> TakeSlot()
    {
        if (TryTakeFast(out PoolSlot<T>? slot))
        {
            return slot;
        }

        slot = TakeSlotSlow(Timeout.Infinite);
        Debug.Assert(slot is not null, "An infinite wait ends with a slot or an exception.");
        return slot;
    }

    /// <summary>Takes an object if one is idle or may be created; never waits.</summary>
    /// <param name="slot">The slot of the rented object, or <see langword="null"/> when this returns <see langword="false"/>.</param>
    /// <returns><see langword="false"/> if the pool is exhausted or other takers are already waiting.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed.</exception>
    /// <remarks>
    /// An object that another thread is returning or taking at that very moment (its own cache is
    /// busy) is not waited for; if the cap allows, a new object is created instead.
    /// </remarks>
    public bool TryTakeSlot([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        if (TryTakeFast(out slot))
        {
            return true;
        }

        slot = TakeSlotSlow(millisecondsTimeout: 0);
        return slot is not null;
    }

    /// <summary>Takes an object, waiting at most <paramref name="timeout"/> while the pool is exhausted.</summary>
    /// <param name="timeout">How long to wait; <see cref="TimeSpan.Zero"/> not at all, <see cref="Timeout.InfiniteTimeSpan"/> forever.</param>
    /// <param name="slot">The slot of the rented object, or <see langword="null"/> when this returns <see langword="false"/>.</param>
    /// <returns><see langword="false"/> if the wait timed out; the pool is then exactly as if this had never been called.</returns>
    /// <exception cref="ArgumentOutOfRangeException">
    /// <paramref name="timeout"/> is negative other than <see cref="Timeout.InfiniteTimeSpan"/>, or longer than <see cref="int.MaxValue"/> milliseconds.
    /// </exception>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    public bool TryTakeSlot(TimeSpan timeout, [NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        long milliseconds = (long)timeout.TotalMilliseconds;
        if (milliseconds is < Timeout.Infinite or > int.MaxValue)
        {
            ThrowTimeoutOutOfRange(nameof(timeout));
        }

        if (TryTakeFast(out slot))
        {
            return true;
        }

        slot = TakeSlotSlow((int)milliseconds);
        return slot is not null;
    }

    /// <summary>Takes an object, waiting asynchronously while the pool is exhausted.</summary>
    /// <param name="cancellationToken">Cancels the wait; the pool is then exactly as if this had never been called.</param>
    /// <returns>The slot of the rented object. Completes synchronously, without allocating, when an object is idle.</returns>
    /// <exception cref="ObjectDisposedException">The pool is disposed, before or while waiting.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled before an object was handed over.</exception>
    public ValueTask<PoolSlot<T>> TakeSlotAsync(CancellationToken cancellationToken = default)
    {
        if (TryTakeFast(out PoolSlot<T>? slot))
        {
            return new ValueTask<PoolSlot<T>>(slot);
        }

        return TakeSlotSlowAsync(cancellationToken);
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
    /// changes nothing; any other exception comes after the slot was returned (or discarded).
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
            ThrowSlotAlreadyReturned();
        }

        if (Volatile.Read(ref _disposed) != 0)
        {
            Discard(slot, PoolMetrics.DiscardReason.Disposed);
            return;
        }

        if (_releaseChecks != 0 && IsStaleOnRelease(slot, out PoolMetrics.DiscardReason reason))
        {
            Discard(slot, reason);
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
    /// <remarks>The object goes where every thread looks, not into the calling thread's own cache.</remarks>
    protected bool TryAllocatePush()
    {
        ThrowIfDisposed();
        if (!_allocationBudget.TryTake())
        {
            return false;
        }

        // Pre-warmed objects are for whichever threads take first; kept in the calling thread's cache
        // (often a constructor's), every other thread would have to steal them through the gate.
        PoolSlot<T> slot = CreateSlot();
        slot.MarkInPool();
        StoreShared(slot);
        return true;
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
    /// Called on the taking thread, for idle objects only (never for one just made), and only if a
    /// subclass overrides it; the default is never called. If it throws, the object is discarded and
    /// the exception reaches the taker.
    /// </remarks>
    protected virtual bool Validate(T @object) => true;

    /// <summary>
    /// Disposes the pool: wakes every waiter with <see cref="ObjectDisposedException"/>, disposes the
    /// idle objects that are <see cref="IDisposable"/>, and from then on disposes released objects
    /// instead of storing them. Calling it again does nothing.
    /// </summary>
    /// <exception cref="AggregateException">Several idle objects threw from their <see cref="IDisposable.Dispose"/>; it holds their exceptions.</exception>
    /// <remarks>
    /// Safe to call concurrently with any other member; rented objects stay usable until released.
    /// Every idle object is disposed exactly once even when some throw; then the one exception is
    /// rethrown as it is, or several together in an <see cref="AggregateException"/>. A release or
    /// take racing with this call may dispose some idle objects itself, and then it throws their
    /// exceptions instead. The pool is disposed either way.
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
        if (!disposing || Interlocked.Exchange(ref _disposeStarted, 1) != 0)
        {
            return;
        }

        // Enter the gate for good before saying so: from here on no thread keeps slots in its own
        // cache, and whoever reads _disposed may drain every cache (see DiscardStored).
        _storage.EnterForeign();
        Interlocked.Exchange(ref _disposed, 1);
        StopMaintenance();
        PoolMetrics.Untrack(this);
        FailAllWaiters();
        DiscardStored();
    }

    /// <summary>
    /// The path every take tries first: an idle object the calling thread kept. It fails whenever a
    /// taker waits or the pool is disposed, because both hold the storage's gate closed.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryTakeFast([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        if (_storage.TryTakeOwn(out slot))
        {
            slot.MarkRented();
            if (_takeChecks == 0 || PassesTakeChecks(slot, keepBudgetIfInvalid: false))
            {
                return true;
            }
        }

        slot = null;
        return false;
    }

    /// <summary>Any idle object, else a new one within the cap; never waits and never goes ahead of a waiter.</summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="lookInCaches">
    /// Whether to look into other threads' caches even when the cap leaves no room for a new object;
    /// such a look may cost a process-wide barrier, so a taker that may spin makes it only on its
    /// last round (see <see cref="TrySpinTake"/>). With room under the cap it always looks, so that
    /// an idle object is reused before a new one is made.
    /// </param>
    private bool TryTakeWithoutWaiting([NotNullWhen(true)] out PoolSlot<T>? slot, bool lookInCaches = true)
    {
        ThrowIfDisposed();
        while (Volatile.Read(ref _waiterCount) == 0)
        {
            if (_storage.TryPopSharedAndRefill(out slot, out bool pushedBack)
                || ((lookInCaches || _allocationBudget.CurrentCount != 0) && TrySteal(out slot, out pushedBack)))
            {
                slot.MarkRented();
                if (pushedBack)
                {
                    ServeAfterPushBack(slot);
                }

                if (_takeChecks == 0 || PassesTakeChecks(slot, keepBudgetIfInvalid: false))
                {
                    return true;
                }

                // Invalid and discarded: look again, as if it had never been there.
                continue;
            }

            if (_allocationBudget.TryTake())
            {
                slot = CreateRentedSlot();
                return true;
            }

            break;
        }

        slot = null;
        return false;
    }

    /// <summary>
    /// Takes a slot another thread (or this one) kept in its cache, and moves the rest of that cache
    /// onto the shared stack, entering the gate only for the attempt and only if some cache looks non-empty.
    /// </summary>
    /// <remarks>
    /// Why only for the attempt: while the gate is closed every owner leaves its cache alone and
    /// every release goes to the shared stack, which slows every thread; only a queued waiter holds
    /// it longer. The taker skips busy caches: it will look again, or queue, and a waiter's look
    /// waits for them.
    /// </remarks>
    private bool TrySteal([NotNullWhen(true)] out PoolSlot<T>? slot, out bool pushedBack)
    {
        if (!_storage.MayHoldCached())
        {
            slot = null;
            pushedBack = false;
            return false;
        }

        _storage.EnterForeign();
        try
        {
            return _storage.TrySteal(out slot, out pushedBack, waitForOwners: false);
        }
        finally
        {
            _storage.ExitForeign();
        }
    }

    /// <summary>Makes an object that the pool neither counts nor keeps; for callers that must not wait (see <see cref="ObjectPoolAdapter{T}"/>).</summary>
    internal T CreateUnpooled()
    {
        ThrowIfDisposed();
        return Construct();
    }

    private T Construct() =>
        ObjectConstructor() ?? throw new InvalidOperationException($"{GetType().Name}.{nameof(ObjectConstructor)} returned null.");

    /// <summary>Makes an object and its slot with one unit of budget the caller already holds.</summary>
    private PoolSlot<T> CreateSlot()
    {
        T @object;
        try
        {
            @object = Construct();
        }
        catch
        {
            ReturnBudget();
            throw;
        }

        var slot = new PoolSlot<T>(this, @object) { Generation = Volatile.Read(ref _generation) };
        if (_maxObjectLifetime != 0)
        {
            slot.CreatedAt = _timeProvider.GetTimestamp();
        }

        _storage.Register(slot);
        try
        {
            HoldSlotInObject(@object, slot);
        }
        catch (Exception failure)
        {
            // Never counted as created, so not counted as discarded either.
            DiscardAfterFailure(slot, failure, reason: null);
            throw;
        }

        PoolMetrics.Created(_name);
        return slot;
    }

    /// <summary>Makes an object for a taker with one unit of budget the caller already holds, and starts its rental.</summary>
    private PoolSlot<T> CreateRentedSlot()
    {
        PoolSlot<T> slot = CreateSlot();
        if ((_takeChecks & TrackRentals) != 0)
        {
            BeginTrackedRental(slot);
        }

        return slot;
    }

    /// <summary>
    /// What a take owes beyond the fast path, for an idle slot just marked rented: validation
    /// (an invalid object is discarded, and this returns <see langword="false"/>) and leak tracking.
    /// </summary>
    /// <param name="slot">The slot taken.</param>
    /// <param name="keepBudgetIfInvalid">
    /// Whether an invalid object's place under the cap stays with the caller, who then makes a new
    /// object with it (a waiter that was handed the object), instead of going back to the pool.
    /// </param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool PassesTakeChecks(PoolSlot<T> slot, bool keepBudgetIfInvalid)
    {
        int checks = Volatile.Read(ref _takeChecks);

        // A Clear promises that no object idle before it is handed out after it, even one that a
        // concurrent Trim or idle sweep had out of storage while Clear emptied it.
        if ((checks & DiscardCleared) != 0 && slot.Generation != Volatile.Read(ref _generation))
        {
            DiscardRefused(slot, PoolMetrics.DiscardReason.Trimmed, keepBudgetIfInvalid);
            return false;
        }

        if ((checks & ValidateOnTake) != 0)
        {
            bool valid;
            try
            {
                valid = Validate(slot.Object);
            }
            catch (Exception failure)
            {
                DiscardAfterFailure(slot, failure, PoolMetrics.DiscardReason.Invalid);
                throw;
            }

            if (!valid)
            {
                DiscardRefused(slot, PoolMetrics.DiscardReason.Invalid, keepBudgetIfInvalid);
                return false;
            }
        }

        if ((checks & TrackRentals) != 0)
        {
            BeginTrackedRental(slot);
        }

        return true;
    }

    /// <summary>
    /// Discards an idle object a take refused. A taker that keeps the place under the cap (to make a
    /// new object with it) gives it back after all if the object's Dispose throws, since that
    /// exception ends the take.
    /// </summary>
    private void DiscardRefused(PoolSlot<T> slot, PoolMetrics.DiscardReason reason, bool keepBudget)
    {
        try
        {
            Discard(slot, reason, returnBudget: !keepBudget);
        }
        catch (Exception) when (keepBudget)
        {
            ReturnBudget();
            throw;
        }
    }

    /// <summary>
    /// What a release owes beyond the fast path: says whether the object must be discarded instead
    /// of stored (too old, or made before a <see cref="Clear"/>), and restarts its idle time.
    /// </summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool IsStaleOnRelease(PoolSlot<T> slot, out PoolMetrics.DiscardReason reason)
    {
        int checks = Volatile.Read(ref _releaseChecks);
        reason = PoolMetrics.DiscardReason.Expired;
        if ((checks & DiscardCleared) != 0 && slot.Generation != Volatile.Read(ref _generation))
        {
            return true;
        }

        // The maintenance timer marks objects past their lifetime, so a release reads no clock.
        if ((checks & EnforceLifetime) != 0 && Volatile.Read(ref slot.Expired))
        {
            return true;
        }

        if ((checks & TrackIdleTime) != 0)
        {
            // Idle from now: the idle sweep stamps it the first time it finds it in the pool.
            Volatile.Write(ref slot.IdleSince, 0);
        }

        return false;
    }

    /// <summary>Makes a slot the caller owns idle: hands it to a waiter, stores it, or disposes it if the pool is disposed.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Store(PoolSlot<T> slot)
    {
        slot.MarkInPool();

        // Kept in the caller's own cache only while the gate is open, that is with no waiter and
        // before Dispose; a waiter or Dispose entering the gate later finds it there (see ForeignAccessGate).
        if (!_storage.TryKeepOwn(slot, Environment.CurrentManagedThreadId))
        {
            StoreShared(slot);
        }
    }

    /// <summary>Stores an in-pool slot on the shared stack, then serves waiters or drains a disposed pool.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void StoreShared(PoolSlot<T> slot)
    {
        _storage.PushShared(slot);
        ServeAfterSharedPush();
    }

    /// <summary>
    /// Does what the slots a take pushed back onto the shared stack owe. If that throws (an idle
    /// object's Dispose, in a pool being disposed), the taker's own slot is stored before the
    /// exception leaves, so it is not lost with it; if storing it throws too, both leave together.
    /// </summary>
    private void ServeAfterPushBack(PoolSlot<T> taken)
    {
        try
        {
            ServeAfterSharedPush();
        }
        catch (Exception failure)
        {
            try
            {
                Store(taken);
            }
            catch (Exception storeFailure)
            {
                throw new AggregateException(failure, storeFailure);
            }

            throw;
        }
    }

    /// <summary>What every push onto the shared stack owes: serving waiters, draining a disposed pool.</summary>
    private void ServeAfterSharedPush()
    {
        // The push is a full fence (an interlocked operation), so these reads cannot move before it.
        // A new waiter increments _waiterCount (interlocked) before it looks in storage, and Dispose
        // sets _disposed (interlocked) before it drains storage: either they see this slot, or we see
        // them here and do their work for them. That is what rules out a lost wake-up or a slot left
        // behind in a disposed pool.
        if (Volatile.Read(ref _waiterCount) != 0)
        {
            ServeWaiters();
        }

        if (Volatile.Read(ref _disposed) != 0)
        {
            DiscardStored();
        }
    }

    /// <summary>Ends a rental without storing the object; what <see cref="PoolSlot{T}.Discard"/> does.</summary>
    internal void DiscardRental(PoolSlot<T> slot)
    {
        if (!slot.TryBeginReturn())
        {
            ThrowSlotAlreadyReturned();
        }

        Discard(slot, Volatile.Read(ref _disposed) != 0 ? PoolMetrics.DiscardReason.Disposed : PoolMetrics.DiscardReason.Discarded);
    }

    /// <summary>
    /// Disposes a slot's object and, unless <paramref name="returnBudget"/> is <see langword="false"/>,
    /// gives its place under the cap back, even if the object's Dispose throws.
    /// </summary>
    /// <param name="slot">A slot the caller owns and that is in no storage.</param>
    /// <param name="reason">Why, for the discarded-objects counter; <see langword="null"/> for an object never counted as created.</param>
    /// <param name="returnBudget">Whether the place under the cap goes back to the pool, or stays with the caller.</param>
    private void Discard(PoolSlot<T> slot, PoolMetrics.DiscardReason? reason, bool returnBudget = true)
    {
        slot.MarkDiscarded();
        _storage.Unregister(slot);
        if (reason is { } counted)
        {
            PoolMetrics.Discarded(_name, counted);
        }

        try
        {
            (slot.Object as IDisposable)?.Dispose();
        }
        finally
        {
            if (returnBudget)
            {
                ReturnBudget();
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
    /// Discards every stored slot; used once the pool is disposed, whose gate is then closed for good.
    /// Every object is disposed even if some throw; then the one exception is rethrown as it is, or
    /// several in an <see cref="AggregateException"/>.
    /// </summary>
    private void DiscardStored()
    {
        List<Exception>? failures = null;
        while (_storage.TryTakeAny(out PoolSlot<T>? slot))
        {
            try
            {
                Discard(slot, PoolMetrics.DiscardReason.Disposed);
            }
            catch (Exception failure)
            {
                (failures ??= []).Add(failure);
            }
        }

        if (failures is not null)
        {
            ThrowDisposeFailures(failures);
        }
    }

    private void ReturnBudget()
    {
        _allocationBudget.Release();

        // Same pairing as in Store: a waiter that queued before this release must get the unit.
        if (Volatile.Read(ref _waiterCount) != 0)
        {
            ServeWaiters();
        }
    }

    private void ThrowIfDisposed()
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            ThrowDisposed();
        }
    }

    /// <summary>Gets an option's name as an argument exception names it.</summary>
    private static string OptionName(string option) => $"options.{option}";

    /// <summary>Checks the cap given to the constructor that takes only it, under that parameter's name.</summary>
    private static PoolOptions ValidMaxCapacity(int maxCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(maxCapacity, 1);
        return new PoolOptions { MaxCapacity = maxCapacity };
    }

    /// <summary>Converts an optional time span option to <see cref="TimeProvider"/> timestamp units; 0 when it is off.</summary>
    private long Timestamps(TimeSpan? option, string optionName)
    {
        if (option is not { } span)
        {
            return 0;
        }

        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(span, TimeSpan.Zero, OptionName(optionName));

        // Spans too long for the clock's units (TimeSpan.MaxValue among them) mean "never" in practice.
        double timestamps = span.TotalSeconds * _timeProvider.TimestampFrequency;
        return timestamps >= long.MaxValue ? long.MaxValue : Math.Max(1, (long)timestamps);
    }

    /// <summary>Gets whether the concrete pool type overrides <see cref="Validate"/>; the default is never called.</summary>
    private bool OverridesValidate() =>
        GetType().GetMethod(nameof(Validate), BindingFlags.Instance | BindingFlags.NonPublic, [typeof(T)])?.DeclaringType != typeof(Pool<T>);

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
    private void ThrowDisposed() => throw new ObjectDisposedException(GetType().FullName);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowDisposeFailures(List<Exception> failures)
    {
        if (failures.Count == 1)
        {
            ExceptionDispatchInfo.Throw(failures[0]);
        }

        throw new AggregateException(failures);
    }

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowForeignSlot(string paramName) =>
        throw new ArgumentException("The slot belongs to another pool.", paramName);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowSlotAlreadyReturned() =>
        throw new InvalidOperationException("The slot was already returned: it was released or disposed twice.");

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowTimeoutOutOfRange(string paramName) =>
        throw new ArgumentOutOfRangeException(paramName, "The timeout must be Timeout.InfiniteTimeSpan or from zero to int.MaxValue milliseconds.");
}
