using System.Net.Sockets;
using System.Runtime.CompilerServices;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>A pool of <see cref="SocketAsyncEventArgs"/>, each owning one pinned buffer of <see cref="BufferSize"/> bytes
/// (or none, when that is 0) and carrying its <see cref="PoolSlot{T}"/> in <see cref="SocketAsyncEventArgs.UserToken"/>.</summary>
/// <remarks>
/// Args are created on demand up to <see cref="Pool{T}.MaxCapacity"/>, each buffer once on the pinned object heap. On
/// release an args is reset for its next user: accept socket, remote endpoint, flags and buffer list cleared, the
/// buffer window spanning its own buffer again, the user token kept. An args released with an operation still pending
/// is discarded and the releaser gets the exception, so a busy args never reaches another user. Thread safety: as
/// <see cref="Pool{T}"/>; every member may be called from any thread.
/// </remarks>
public sealed class SocketArgsPool : Pool<SocketAsyncEventArgs>
{
    /// <summary>Creates a pool of args with <paramref name="bufferSize"/>-byte buffers.</summary>
    /// <param name="bufferSize">
    /// The size in bytes of each args' buffer; 0 for args without a buffer of their own, whose user
    /// sets one per operation (a TCP connection that borrows a buffer only while data is there).
    /// </param>
    /// <param name="maxCapacity">The most args that ever exist at once; at least 1.</param>
    /// <param name="initialCount">How many args to create up front (0 to <paramref name="maxCapacity"/>).</param>
    /// <exception cref="ArgumentOutOfRangeException">An argument is out of its range.</exception>
    public SocketArgsPool(int bufferSize, int maxCapacity, int initialCount = 0)
        : base(maxCapacity)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(bufferSize);
        ArgumentOutOfRangeException.ThrowIfNegative(initialCount);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(initialCount, maxCapacity);
        BufferSize = bufferSize;
        if (initialCount > 0)
        {
            TryAllocatePush(initialCount);
        }
    }

    /// <summary>Creates an empty pool of args with <paramref name="bufferSize"/>-byte buffers, named for its metrics.</summary>
    /// <param name="bufferSize">As in <see cref="SocketArgsPool(int, int, int)"/>.</param>
    /// <param name="maxCapacity">The most args that ever exist at once; at least 1.</param>
    /// <param name="name">The pool's <see cref="Pool{T}.Name"/>, which tags its metrics: one per server, so that two
    /// servers' pools are told apart.</param>
    internal SocketArgsPool(int bufferSize, int maxCapacity, string name)
        : base(new PoolOptions { MaxCapacity = maxCapacity, Name = name })
    {
        ArgumentOutOfRangeException.ThrowIfNegative(bufferSize);
        BufferSize = bufferSize;
    }

    /// <summary>The size in bytes of the buffer each args owns.</summary>
    public int BufferSize { get; }

    /// <summary>Takes an args for a server's next operation, waiting while the pool is exhausted.</summary>
    /// <param name="stopping">The server's stopping token: once cancelled, the take, or its wait, ends.</param>
    /// <returns>The slot, or <see langword="null"/> once <paramref name="stopping"/> is cancelled.</returns>
    internal ValueTask<PoolSlot<SocketAsyncEventArgs>?> TakeSlotUnlessStoppingAsync(CancellationToken stopping)
    {
        ValueTask<PoolSlot<SocketAsyncEventArgs>> taking;
        try
        {
            taking = TakeSlotAsync(stopping);
        }
        catch (OperationCanceledException)
        {
            return new ValueTask<PoolSlot<SocketAsyncEventArgs>?>(result: null);
        }

        // The common case, once per message: an idle args taken at once. Not an async method, so that it
        // allocates nothing even where async state machines are classes (Debug builds).
        return taking.IsCompletedSuccessfully
            ? new ValueTask<PoolSlot<SocketAsyncEventArgs>?>(taking.Result)
            : AwaitSlotUnlessStoppingAsync(taking);
    }

    // Pinned once, on the pinned object heap: the socket never pins a buffer per operation, and no heap fragments.
    /// <inheritdoc/>
    protected override SocketAsyncEventArgs ObjectConstructor()
        => new PooledSocketArgs(BufferSize == 0 ? [] : GC.AllocateArray<byte>(BufferSize, pinned: true));

    /// <inheritdoc/>
    protected override void HoldSlotInObject(SocketAsyncEventArgs @object, PoolSlot<SocketAsyncEventArgs> slot)
        => @object.UserToken = slot;

    /// <inheritdoc/>
    protected override void CleanUp(SocketAsyncEventArgs @object)
    {
        // Throws for an args whose operation is pending (the socket layer refuses to reconfigure it); the pool then
        // discards it.
        var args = (PooledSocketArgs)@object;
        if (args.BufferList is not null)
        {
            args.BufferList = null;
        }

        if (args.OwnBuffer.Length == 0)
        {
            args.SetBuffer(null, 0, 0);
        }
        else
        {
            args.SetBuffer(args.OwnBuffer, 0, args.OwnBuffer.Length);
        }

        args.AcceptSocket = null;
        args.RemoteEndPoint = null;
        args.SocketFlags = SocketFlags.None;
        args.SendPacketsElements = null;
        args.DisconnectReuseSocket = false;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async ValueTask<PoolSlot<SocketAsyncEventArgs>?> AwaitSlotUnlessStoppingAsync(ValueTask<PoolSlot<SocketAsyncEventArgs>> taking)
    {
        try
        {
            return await taking.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return null;
        }
    }
}
