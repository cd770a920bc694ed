namespace PoolLib;

// What a subclass calls and overrides: its constructors, and how an object is made, reset, checked and pre-made.
public abstract partial class Pool<T>
{
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
        : this(options, defaultName: null, resetsObjects: false)
    {
    }

    /// <summary>
    /// Initialises a pool as <paramref name="options"/> say, named <paramref name="defaultName"/> unless
    /// <see cref="PoolOptions.Name"/> names it: for a subclass whose pools differ by what they hold, such as the
    /// server a pool of connections connects to.
    /// </summary>
    /// <param name="options">The cap, the name and the optional features; read once, here.</param>
    /// <param name="defaultName">The pool's name when <see cref="PoolOptions.Name"/> is <see langword="null"/>.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="defaultName"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentOutOfRangeException">An option is out of range, as for <see cref="Pool{T}(PoolOptions)"/>.</exception>
    /// <exception cref="ArgumentException"><see cref="PoolOptions.Name"/> or <paramref name="defaultName"/> is empty or white space.</exception>
    /// <remarks>No object is created here; call <see cref="TryAllocatePush(int)"/> to pre-warm.</remarks>
    protected Pool(PoolOptions options, string defaultName)
        : this(options, PoolOptions.ValidDefaultName(defaultName), resetsObjects: false)
    {
    }

    /// <summary>Makes one new object. Called only while the cap allows one more.</summary>
    /// <returns>The new object; never <see langword="null"/>.</returns>
    /// <exception cref="NotSupportedException">Not overridden: a pool overrides this or <see cref="ObjectConstructorAsync"/>.</exception>
    /// <remarks>
    /// May run on several threads at once, on the taker's thread. If it throws, the place under the cap is given back and
    /// the exception reaches the taker; returning <see langword="null"/> throws <see cref="InvalidOperationException"/>.
    /// </remarks>
    protected virtual T ObjectConstructor() =>
        throw new NotSupportedException($"The pool '{Name}' makes its objects with {nameof(ObjectConstructorAsync)}.");

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
        return Lifecycle.TryAddIdle();
    }

    /// <summary>
    /// Begins keeping <see cref="PoolOptions.MinIdle"/> objects idle now, where the pool fills it (see
    /// <see cref="PoolOptions.FillMinIdle"/>), instead of at the first take that finds nothing idle.
    /// </summary>
    /// <remarks>Call it at the end of a subclass's constructor, once what the constructors read is set; calling it again does nothing.</remarks>
    protected void StartFillingMinIdle() => Creator?.StartFilling();

    // For the internal types, which cannot call the protected members themselves.
    internal void HoldSlot(T @object, PoolSlot<T> slot) => HoldSlotInObject(@object, slot);
    internal bool IsValid(T @object) => Validate(@object);
    internal void CleanUpObject(T @object) => CleanUp(@object);
    internal ValueTask<bool> CheckHealthAsync(T @object, CancellationToken cancellationToken) => ValidateAsync(@object, cancellationToken);
}
