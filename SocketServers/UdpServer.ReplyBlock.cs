using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Dataflow;
using Microsoft.Extensions.Logging;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary><see cref="UdpProcessing.ReplyBlock"/>: asynchronous receives, replies through bounded
/// <see cref="ActionBlock{TInput}"/>s, one per socket.</summary>
/// <remarks>
/// Each socket is a lane: its receive loops hand datagrams to its own reply block, which answers from that socket. With a
/// socket per receive (reuse-port on Linux), lanes share nothing but the pool and the counters, and the replies run on
/// as many threads as there are receives. A block's processing task keeps a thread-pool thread while datagrams keep
/// coming, and lets it go <c>s_replierLinger</c> after the last one, or when the server stops.
/// </remarks>
public partial class UdpServer
{
    // How long a reply block's processing task waits for the next datagram before it ends and gives its
    // thread back to the pool. Far longer than the gaps within a stream of datagrams (microseconds), short
    // enough that a server that has gone idle does not hold a thread-pool thread for long.
    private static readonly TimeSpan s_replierLinger = TimeSpan.FromMilliseconds(50);

    // One per socket (so one in all on a port the server keeps to itself), each holding a share of
    // MaxPendingDatagrams; set by StartReplyBlock before any receive loop starts.
    private ReplyLane[] _lanes = [];

    private Task ReplyBlockCompletion => Task.WhenAll(Array.ConvertAll(_lanes, lane => lane.Completion));

    /// <returns>How many datagrams the reply blocks of <paramref name="lanes"/> lanes hold at most, together:
    /// <paramref name="maxPendingDatagrams"/>, or one per lane where that is more.</returns>
    private static int PendingCapacity(int maxPendingDatagrams, int lanes) => Math.Max(maxPendingDatagrams, lanes);

    private Task[] StartReplyBlock(Socket[] sockets)
    {
        var lanes = new ReplyLane[sockets.Length];
        for (int i = 0; i < lanes.Length; i++)
        {
            // An equal share of the pending datagrams, the first lanes taking the remainder, and at least one each.
            int share = (_maxPendingDatagrams / lanes.Length) + (i < _maxPendingDatagrams % lanes.Length ? 1 : 0);
            lanes[i] = new ReplyLane(this, sockets[i], Math.Max(1, share));
        }

        _lanes = lanes;
        var loops = new Task[_concurrentReceives];
        for (int i = 0; i < loops.Length; i++)
        {
            ReplyLane lane = lanes[i % lanes.Length];
            loops[i] = RunRestartingAsync(() => ReceiveAndHandOverAsync(lane), "receive");
        }

        return loops;
    }

    private void StopReplyBlock()
    {
        foreach (ReplyLane lane in _lanes)
        {
            lane.Complete();
        }
    }

    // The receive loops and the reply blocks are done: nobody waits on or sets the events any more.
    private void DisposeReplyBlock()
    {
        foreach (ReplyLane lane in _lanes)
        {
            lane.Dispose();
        }
    }

    /// <summary>A receive loop: receives datagrams on its lane's socket and hands them to the lane's reply block until
    /// the server stops.</summary>
    /// <exception cref="Exception">Anything unexpected; every args taken is back in the pool or in the block by then.</exception>
    private async Task ReceiveAndHandOverAsync(ReplyLane lane)
    {
        CancellationToken stopping = StoppingToken;

        // On a wildcard address the loop receives with the address each datagram was sent to (see
        // TakeDatagram), and the socket writes each sender's address here; otherwise unused.
        SocketAddress? sender = _replyFromDestination ? new SocketAddress(lane.Socket.AddressFamily) : null;
        while (!stopping.IsCancellationRequested)
        {
            if (await TakeSlotUnlessStoppingAsync().ConfigureAwait(false) is not { } slot)
            {
                break;
            }

            bool handedOver = false;
            try
            {
                var args = (PooledSocketArgs)slot.Object;
                if (sender is null)
                {
                    await StartReceive(args, lane.Socket).ConfigureAwait(false);
                    args.DatagramLength = (args.SocketFlags & SocketFlags.Truncated) == 0 ? args.BytesTransferred : int.MaxValue;
                }
                else
                {
                    for (bool waited = false; !TakeDatagram(args, lane.Socket, sender, waited); waited = true)
                    {
                        await WaitForDatagram(args, lane.Socket).ConfigureAwait(false);
                    }
                }

                UdpDatagramFilter.Outcome outcome = _filter.Judge(args, args.SocketError, args.DatagramLength);
                if (outcome == UdpDatagramFilter.Outcome.Stop)
                {
                    break;
                }

                if (outcome == UdpDatagramFilter.Outcome.Answer)
                {
                    // The block owns the args from here (it may already be replied to and reused when this
                    // returns); a full block makes this receive loop wait.
                    handedOver = await lane.HandOverAsync(args, stopping).ConfigureAwait(false);
                }
            }
            catch (OperationCanceledException)
            {
                _outcomes.Dropped(UdpDatagramOutcomes.DroppedStopping);
                break;
            }
            finally
            {
                if (!handedOver)
                {
                    Pool.Release(slot);
                }
            }
        }
    }

    /// <summary>Starts the receive of one datagram into <paramref name="args"/> on <paramref name="socket"/>; a socket
    /// already closed ends it at once.</summary>
    /// <returns>The receive, to await; then <see cref="SocketAsyncEventArgs.SocketError"/> says how it went
    /// (<see cref="SocketError.OperationAborted"/> once the socket is closed).</returns>
    private static ValueTask StartReceive(PooledSocketArgs args, Socket socket)
    {
        // The args' own endpoint, updated in place by the receive: no endpoint allocated per datagram.
        args.RemoteEndPoint = args.SenderEndPoint(socket.AddressFamily);
        try
        {
            // Only the start throws, synchronously: a pending receive ends with an error, never an exception.
            return args.ReceiveFromAsync(socket);
        }
        catch (ObjectDisposedException)
        {
            args.SocketError = SocketError.OperationAborted;
            return default;
        }
    }

    /// <summary>Takes the datagram waiting on <paramref name="socket"/> into <paramref name="args"/>, with the address it
    /// was sent to, which .NET's own receive would allocate; if none waits, the caller waits for one with a peek of no
    /// bytes (<see cref="WaitForDatagram"/>), which wakes the loop without taking it, and calls this again.</summary>
    /// <param name="args">The args; on <see langword="true"/>, its <see cref="SocketAsyncEventArgs.SocketError"/> and
    /// <see cref="PooledSocketArgs.DatagramLength"/> give the outcome.</param>
    /// <param name="socket">The lane's socket.</param>
    /// <param name="sender">Where the socket writes the sender's address.</param>
    /// <param name="waited">Whether a peek ran before this call, whose buffer and flags are undone here.</param>
    /// <returns>Whether the receive ended: a datagram, an error, or the socket closed during the wait.</returns>
    private static bool TakeDatagram(PooledSocketArgs args, Socket socket, SocketAddress sender, bool waited)
    {
        if (waited)
        {
            args.SetBuffer(0, args.OwnBuffer.Length);
            args.SocketFlags = SocketFlags.None;
            if (args.SocketError == SocketError.OperationAborted)
            {
                args.DatagramLength = 0;
                return true;
            }
        }

        SocketError error = ReceiveWithDestination(socket, args, sender, out int length);
        if (error == SocketError.WouldBlock)
        {
            return false;
        }

        args.SocketError = error == SocketError.Success ? TakeSender(args, socket.AddressFamily, sender) : error;
        args.DatagramLength = length;
        return true;
    }

    /// <summary>Takes the datagram waiting on <paramref name="socket"/>, with its sender and the address it was sent to,
    /// without waiting; a socket already closed ends it at once.</summary>
    /// <returns>How it went; <see cref="SocketError.WouldBlock"/> when no datagram is there.</returns>
    private static SocketError ReceiveWithDestination(Socket socket, PooledSocketArgs args, SocketAddress sender, out int length)
    {
        length = 0;
        try
        {
            return PacketInfoSocket.Receive(socket, args.OwnBuffer, sender, out args.ReplySource, out length, wait: false);
        }
        catch (ObjectDisposedException)
        {
            return SocketError.OperationAborted;
        }
    }

    /// <summary>Starts a peek of no bytes into <paramref name="args"/>, which completes once a datagram waits on
    /// <paramref name="socket"/> and leaves it there; the caller restores the args' buffer and flags after it.</summary>
    /// <returns>The peek, to await; then <see cref="SocketError.OperationAborted"/> once the socket is closed.</returns>
    private static ValueTask WaitForDatagram(PooledSocketArgs args, Socket socket)
    {
        args.SetBuffer(0, 0);
        args.SocketFlags = SocketFlags.Peek;
        try
        {
            return args.ReceiveAsync(socket);
        }
        catch (ObjectDisposedException)
        {
            args.SocketError = SocketError.OperationAborted;
            return default;
        }
    }

    /// <summary>One socket's reply block: a bounded <see cref="ActionBlock{TInput}"/> that sends each datagram back from
    /// that socket, and whose processing task lingers between datagrams (<see cref="WaitForNextDatagram"/>).</summary>
    /// <remarks>
    /// Lock-free handshake: the replier resets the event, publishes <see cref="_replierWaiting"/> = 1 with a full fence,
    /// then waits only if the queue is empty and <see cref="_waitingForRoom"/> is 0; a receive loop enqueues (or counts
    /// itself in <see cref="_waitingForRoom"/>), then swaps the flag back to 0 with CompareExchange, a full fence, and
    /// sets the event if it was 1. So either the replier sees the datagram, or the receive loop sees the flag and wakes
    /// it: no datagram waits for the linger to run out. A late set only makes a later wait return early.
    /// </remarks>
    private sealed class ReplyLane : IDisposable
    {
        private readonly UdpServer _server;
        private readonly ActionBlock<PooledSocketArgs> _replies;
        private readonly int _capacity;

        // Set by whoever takes _replierWaiting from 1 to 0 (a receive loop that handed over a datagram or found the
        // block full, or the stop); reset by the replier before it announces that it waits.
        private readonly ManualResetEventSlim _datagramQueued = new(initialState: false);

        // 1 while the block's action waits in WaitForNextDatagram, else 0. Only the replier sets it to 1;
        // a waker takes it back to 0 with CompareExchange, so each wait is signalled at most once.
        private int _replierWaiting;

        // Receive loops whose datagram the full block refused and that now wait for room (SendAsync). Such a
        // datagram is postponed, not queued: the block takes it only once the action returns (with a bound of one,
        // the datagram just replied to is what fills it), so the replier must not wait while this is above 0.
        private int _waitingForRoom;

        public ReplyLane(UdpServer server, Socket socket, int capacity)
        {
            _server = server;
            Socket = socket;
            _capacity = capacity;
            _replies = new ActionBlock<PooledSocketArgs>(
                Reply,
                new ExecutionDataflowBlockOptions
                {
                    BoundedCapacity = capacity,
                    // One reply at a time. With room for two, a datagram that arrives while the replier waits in
                    // WaitForNextDatagram starts a second processing task (a Task each time) unless that one lingers
                    // too, and two lingering repliers cost more than they gain under light load on a small machine.
                    MaxDegreeOfParallelism = 1,
                });
        }

        /// <summary>The socket this lane receives on and replies from.</summary>
        public Socket Socket { get; }

        public Task Completion => _replies.Completion;

        /// <summary>Gives a received datagram to the block, waiting while it is full.</summary>
        /// <returns>Whether the block took it (and with it the args); <see langword="false"/> once it declines for good
        /// (stopping), when the datagram is counted as dropped.</returns>
        public ValueTask<bool> HandOverAsync(PooledSocketArgs args, CancellationToken stopping)
        {
            if (_replies.Post(args))
            {
                WakeReplier();
                return new ValueTask<bool>(true);
            }

            return WaitForRoomAsync(args, stopping);
        }

        /// <summary>Datagrams already in the block are still answered; later ones are declined and their args released.
        /// The stopping token is already cancelled, so a replier woken now does not wait again.</summary>
        public void Complete()
        {
            _replies.Complete();
            WakeReplier();
        }

        public void Dispose() => _datagramQueued.Dispose();

        /// <summary>Offers a datagram the full block refused, waiting until it has room (the slow path).</summary>
        [MethodImpl(MethodImplOptions.NoInlining)]
        private async ValueTask<bool> WaitForRoomAsync(PooledSocketArgs args, CancellationToken stopping)
        {
            // Announce the postponed datagram before waking the replier, so that it does not go back to waiting for a
            // queued one while this waits for room (with a bound of one, the datagram in its hands fills the block).
            Interlocked.Increment(ref _waitingForRoom);
            try
            {
                WakeReplier();
                bool taken = await _replies.SendAsync(args, stopping).ConfigureAwait(false);
                if (taken)
                {
                    WakeReplier();
                }
                else
                {
                    _server._outcomes.Dropped(UdpDatagramOutcomes.DroppedStopping);
                }

                return taken;
            }
            finally
            {
                Interlocked.Decrement(ref _waitingForRoom);
            }
        }

        /// <summary>The block's action: sends the datagram back from its own buffer and releases the args. It never
        /// throws: an exception out of the action would fault the block, which would then decline every later datagram.</summary>
        private void Reply(PooledSocketArgs args)
        {
            if (_server.StopCutShort)
            {
                // The grace period is over and the socket closed: what the block still holds goes unanswered, and
                // never reaches the handler (a call the stop went on without may only now have returned).
                _server._outcomes.Dropped(UdpDatagramOutcomes.DroppedStopping);
                _server.Pool.Release(args.Slot);
                return;
            }

            try
            {
                int length = args.DatagramLength;
                if (_server.TryReply(Socket, args, ref length, out Exception? failure))
                {
                    _server.EndReply(args, length, failure);
                }
            }
            catch (Exception ex)
            {
                _server._outcomes.ReplyFaulted(ex);
            }

            WaitForNextDatagram();
        }

        /// <summary>
        /// Called by the block's action after a reply when no datagram is queued: waits briefly for the next one, so
        /// that the block's processing task goes on instead of ending. An <see cref="ActionBlock{TInput}"/> ends that
        /// task as soon as its queue is empty and starts a new <see cref="Task"/> for the next datagram posted; a server
        /// that keeps up with its load finds the queue empty after most replies, so that would be about one Task
        /// (64 bytes) per datagram. The wait ends after <see cref="s_replierLinger"/>, or once the server stops.
        /// </summary>
        private void WaitForNextDatagram()
        {
            Debug.Assert(Volatile.Read(ref _replierWaiting) == 0, "Only the replier sets the flag, and it clears it before it leaves.");
            // With room for one datagram, the block stays full while this waits (its count drops only when the action
            // returns), so every datagram arriving meanwhile would take the slow, allocating SendAsync path: don't wait.
            // Nor once the server stops: the event may be disposed by the time a call the stop went on without returns.
            if (_capacity == 1 || _replies.InputCount > 0 || _server.StoppingToken.IsCancellationRequested)
            {
                return;
            }

            _datagramQueued.Reset();
            Interlocked.Exchange(ref _replierWaiting, 1);
            if (_replies.InputCount == 0 && Volatile.Read(ref _waitingForRoom) == 0 && !_server.StoppingToken.IsCancellationRequested)
            {
                _datagramQueued.Wait(s_replierLinger);
            }

            Volatile.Write(ref _replierWaiting, 0);
        }

        /// <summary>Wakes the replier if it waits in <see cref="WaitForNextDatagram"/>.</summary>
        private void WakeReplier()
        {
            if (Interlocked.CompareExchange(ref _replierWaiting, 0, 1) == 1)
            {
                _datagramQueued.Set();
            }
        }
    }
}
