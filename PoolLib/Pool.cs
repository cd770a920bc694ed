using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Reflection;
using System.Runtime.CompilerServices;
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
/// Every member is safe to call from any number of threads at once. A thread that takes again finds
/// first the objects it took last, once they are back. <see cref="CleanUp"/> runs on the releasing
/// thread before the object is visible to another taker; <see cref="ObjectConstructor"/> and
/// <see cref="HoldSlotInObject"/> run on the taking (or pre-warming) thread, never under a lock.
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
// The non-public methods are kept for trimming so that the constructor can tell which virtual methods are overridden.
[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.NonPublicMethods)]
public abstract partial class Pool<T> : IDisposable, PoolMetrics.IObservedPool where T : class
{
    // Bits of _takeChecks and _releaseChecks: what a take or release must do beyond its fast path.
    // A pool with no option on and a clean-up to run has both at 0, and pays one load and one branch for each.
    private const int ValidateOnTake = 1;
    private const int TrackRentals = 2;
    private const int TrackIdleTime = 1;
    private const int PoolDisposed = 2;

    private readonly LockFreeSemaphore _allocationBudget;
    private readonly SlotStorage<T> _storage;
    private readonly string _name;
    private readonly int _takeChecks;

    // Whether CleanUp does anything; without it a release makes its slot idle with one swap.
    private readonly bool _cleansUp;

    // Gains PoolDisposed when the pool is disposed; otherwise fixed at construction.
    private int _releaseChecks;

    // 0 while the pool is live, 1 once Dispose has begun; set with Interlocked.Exchange.
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

    /// <summary>The constructor every other one calls.</summary>
    /// <param name="options">The options, checked here.</param>
    /// <param name="defaultName">Replaces the type's name as the default name.</param>
    /// <param name="cleansUp">Whether <see cref="CleanUp"/> does anything; <see langword="null"/> to tell by whether it is overridden.</param>
    private protected Pool(PoolOptions options, string? defaultName, bool? cleansUp = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentOutOfRangeException.ThrowIfLessThan(options.MaxCapacity, 1, OptionName(nameof(PoolOptions.MaxCapacity)));
        ArgumentOutOfRangeException.ThrowIfNegative(options.MinIdle, OptionName(nameof(PoolOptions.MinIdle)));
        ArgumentOutOfRangeException.ThrowIfGreaterThan(options.MinIdle, options.MaxCapacity, OptionName(nameof(PoolOptions.MinIdle)));
        if (options.Name is { } name && string.IsNullOrWhiteSpace(name))
        {
            throw new ArgumentException("The pool's name must not be empty or white space.", OptionName(nameof(PoolOptions.Name)));
        }

        InitialiseOptions(options);
        _allocationBudget = new LockFreeSemaphore(options.MaxCapacity, options.MaxCapacity);
        _storage = new SlotStorage<T>(options.MaxCapacity);
        _name = options.Name ?? defaultName ?? DisplayName(GetType());
        _cleansUp = cleansUp ?? Overrides(nameof(CleanUp));
        _takeChecks = (Overrides(nameof(Validate)) ? ValidateOnTake : 0) | (_leakDetectionThreshold != 0 ? TrackRentals : 0);
        _releaseChecks = _idleTimeout != 0 ? TrackIdleTime : 0;

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
    /// Costs a read per object the pool holds; no take or release pays to keep a count. Exact when no
    /// take or release is in flight; under concurrent use a snapshot, never greater than <see cref="TotalCount"/>.
    /// </remarks>
    public int AvailableCount => Math.Min(_storage.CountIdle(), TotalCount);

    int PoolMetrics.IObservedPool.WaiterCount => WaiterCount;

    /// <summary>Gets the pool's storage; for tests that look inside it.</summary>
    internal SlotStorage<T> Storage => _storage;

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
    /// An object that another thread is returning at that very moment (it has not yet finished its
    /// clean-up) is not waited for; if the cap allows, a new object is created instead.
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

        if (_releaseChecks == 0)
        {
            if (!_cleansUp)
            {
                if (slot.TryReturnIdle())
                {
                    ServeIfWaitedFor(slot);
                    return;
                }
            }
            else if (slot.TryBeginReturn())
            {
                CleanUpOrDiscard(slot);
                if (slot.TryPublish())
                {
                    ServeIfWaitedFor(slot);
                }
                else
                {
                    Discard(slot, PoolMetrics.DiscardReason.Expired);
                }

                return;
            }
        }

        ReleaseSlow(slot);
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
        if (!disposing || Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        Interlocked.Or(ref _releaseChecks, PoolDisposed);
        Interlocked.Or(ref _waitersOrDisposed, DisposedFlag);
        StopMaintenance();
        PoolMetrics.Untrack(this);
        FailAllWaiters();
        DiscardIdle(PoolMetrics.DiscardReason.Disposed, retiredOnly: false);
    }

    /// <summary>
    /// The path every take tries first: the newest idle object the calling thread returned, unless
    /// a taker is waiting, which goes first, or the pool is being disposed.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool TryTakeFast([NotNullWhen(true)] out PoolSlot<T>? slot)
    {
        if (Volatile.Read(ref _waitersOrDisposed) == 0 && _storage.TryTakeOwn(out slot)
            && (_takeChecks == 0 || PassesTakeChecks(slot, keepBudgetIfInvalid: false)))
        {
            return true;
        }

        slot = null;
        return false;
    }

    private void ThrowIfDisposed()
    {
        if (Volatile.Read(ref _disposed) != 0)
        {
            ThrowDisposed();
        }
    }

    /// <summary>Gets whether the concrete pool type overrides one of this class's non-public virtual methods taking a <typeparamref name="T"/>.</summary>
    private bool Overrides(string method) =>
        GetType().GetMethod(method, BindingFlags.Instance | BindingFlags.NonPublic, [typeof(T)])?.DeclaringType != typeof(Pool<T>);

    /// <summary>Gets an option's name as an argument exception names it.</summary>
    private static string OptionName(string option) => $"options.{option}";

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

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private void ThrowDisposed() => throw new ObjectDisposedException(GetType().FullName);

    [DoesNotReturn, StackTraceHidden, MethodImpl(MethodImplOptions.NoInlining)]
    private static void ThrowTimeoutOutOfRange(string paramName) =>
        throw new ArgumentOutOfRangeException(paramName, "The timeout must be Timeout.InfiniteTimeSpan or from zero to int.MaxValue milliseconds.");
}
