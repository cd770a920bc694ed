using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Dataflow;
using NLog;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// An RFC 862 echo server over UDP: every datagram is sent back to its sender.
/// </summary>
/// <remarks>
/// <para>
/// <see cref="UdpEchoServerOptions.ConcurrentReceives"/> receives (one by default; its remarks say why) are
/// outstanding at once, each on a pooled <see cref="SocketAsyncEventArgs"/>. A received datagram goes, with
/// its args, into a bounded <see cref="ActionBlock{TInput}"/> that sends the reply from the args' buffer and
/// returns it to the pool. When <see cref="UdpEchoServerOptions.MaxPendingDatagrams"/> replies wait, the
/// receives wait too and the kernel drops what does not fit in the socket buffer, as UDP does: memory never
/// grows with the load.
/// </para>
/// <para>
/// A datagram larger than <see cref="UdpEchoServerOptions.MaxDatagramSize"/> is dropped with a warning and
/// counted in <see cref="EchoServerCounters.Drops"/>, never echoed truncated. ICMP errors caused by earlier
/// replies (<see cref="SocketError.ConnectionReset"/>, <see cref="SocketError.ConnectionRefused"/> and the
/// like) are logged at Debug and receiving goes on.
/// </para>
/// <para>
/// In steady state an echoed datagram allocates nothing: each args keeps the endpoint its receives report the
/// sender in and updates it in place, the reply is sent synchronously to the socket address that endpoint
/// keeps, and the reply block replies one datagram at a time on one processing task that lives as long as
/// datagrams keep coming. While they do, that task keeps one thread-pool thread; it lets it go 50 ms after
/// the last datagram, or when the server stops.
/// </para>
/// <para>Thread safety: every member may be called from any thread.</para>
/// </remarks>
public sealed class UdpEchoServer : EchoServer
{
    private static readonly Logger s_logger = LogManager.GetCurrentClassLogger();

    // How long the reply block's processing task waits for the next datagram before it ends and gives its
    // thread back to the pool. Far longer than the gaps within a stream of datagrams (microseconds), short
    // enough that a server that has gone idle does not hold a thread-pool thread for long.
    private static readonly TimeSpan s_replierLinger = TimeSpan.FromMilliseconds(50);

    private readonly IPEndPoint _endPoint;
    private readonly int _maxDatagramSize;
    private readonly int _concurrentReceives;
    private readonly int _maxPendingDatagrams;

    // Set by whoever takes _replierWaiting from 1 to 0 (a receive loop that handed over a datagram or found the
    // block full, or the stop); reset by the replier before it announces that it waits.
    private readonly ManualResetEventSlim _datagramQueued = new(initialState: false);

    // 1 while the reply block's action waits in WaitForNextDatagram, else 0. Only the replier sets it to 1;
    // a waker takes it back to 0 with CompareExchange, so each wait is signalled at most once.
    private int _replierWaiting;

    // Receive loops whose datagram the full block refused and that now wait for room (SendAsync). Such a
    // datagram is postponed, not queued, so the replier must not wait for a queued one while this is above 0.
    private int _waitingForRoom;

    // Receive loops still receiving; only a loop that fails unexpectedly ends early, and the log says how many remain.
    private int _receiveLoopsLeft;

    private Socket? _socket;
    private ActionBlock<PooledSocketArgs>? _replies;
    private Task _receiveLoops = Task.CompletedTask;

    /// <summary>Creates a UDP echo server with the default <see cref="UdpEchoServerOptions"/>
    /// (127.0.0.1, port <see cref="EchoServerOptions.DefaultPort"/>).</summary>
    public UdpEchoServer()
        : this(new UdpEchoServerOptions())
    {
    }

    /// <summary>Creates a UDP echo server; it does not bind until <see cref="EchoServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> is <see langword="null"/>.</exception>
    public UdpEchoServer(UdpEchoServerOptions options)
        : base(
            options ?? throw new ArgumentNullException(nameof(options)),
            bufferSize: options.MaxDatagramSize + 1, // one spare byte shows a datagram that did not fit
            poolCapacity: options.MaxPendingDatagrams + options.ConcurrentReceives)
    {
        _endPoint = options.EndPoint;
        _maxDatagramSize = options.MaxDatagramSize;
        _concurrentReceives = options.ConcurrentReceives;
        _maxPendingDatagrams = options.MaxPendingDatagrams;
    }

    /// <inheritdoc/>
    public override ProtocolType Protocol => ProtocolType.Udp;

    private protected override IPEndPoint StartCore()
    {
        Socket socket = BindSocket(_endPoint);
        var bound = (IPEndPoint)socket.LocalEndPoint!;
        _socket = socket;
        _replies = new ActionBlock<PooledSocketArgs>(
            Reply,
            new ExecutionDataflowBlockOptions
            {
                BoundedCapacity = _maxPendingDatagrams,
                // One reply at a time. With room for two, a datagram that arrives while the replier waits in
                // WaitForNextDatagram starts a second processing task (a Task each time) unless that one lingers
                // too, and two lingering repliers cost more than they gain under light load on a small machine.
                MaxDegreeOfParallelism = 1,
            });
        _receiveLoopsLeft = _concurrentReceives;
        var loops = new Task[_concurrentReceives];
        for (int i = 0; i < loops.Length; i++)
        {
            loops[i] = ReceiveLoopAsync(socket, _replies);
        }

        _receiveLoops = Task.WhenAll(loops);
        s_logger.Info(
            "UDP echo server listening on {EndPoint} (max datagram {MaxDatagramSize} B, {Receives} receives, {Pending} pending replies)",
            bound,
            _maxDatagramSize,
            _concurrentReceives,
            _maxPendingDatagrams);
        return bound;
    }

    private protected override Task StopReceivingAsync()
    {
        // Datagrams already received are still answered; later ones are declined and their args released.
        // The stopping token is already cancelled, so a replier woken now does not wait again.
        _replies?.Complete();
        WakeReplier();
        return Task.CompletedTask;
    }

    private protected override Task DrainAsync() => _replies?.Completion ?? Task.CompletedTask;

    private protected override void Abort()
    {
        s_logger.Info("UDP echo server on {EndPoint}: stop grace period over, dropping the replies still waiting", LocalEndPoint);
        _socket?.Dispose();
    }

    private protected override async Task CloseAsync()
    {
        // Closing the socket completes the pending receives; each loop then returns its args.
        _socket?.Dispose();
        await _receiveLoops.ConfigureAwait(false);

        // The receive loops and the reply block are done: nobody waits on or sets the event any more.
        _datagramQueued.Dispose();
        s_logger.Info("UDP echo server on {EndPoint} stopped: {Counters}", LocalEndPoint, Counters);
    }

    private async Task ReceiveLoopAsync(Socket socket, ActionBlock<PooledSocketArgs> replies)
    {
        // Run on the thread pool, not on the caller of StartAsync.
        await Task.CompletedTask.ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        CancellationToken stopping = StoppingToken;
        AddressFamily family = socket.AddressFamily;
        try
        {
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

                    // The args' own endpoint, updated in place by the receive: no endpoint allocated per datagram.
                    args.RemoteEndPoint = args.SenderEndPoint(family);
                    SocketError error;
                    try
                    {
                        await args.ReceiveFromAsync(socket).ConfigureAwait(false);
                        error = args.SocketError;
                    }
                    catch (ObjectDisposedException)
                    {
                        error = SocketError.OperationAborted;
                    }

                    if (error == SocketError.Success && args.BytesTransferred <= _maxDatagramSize
                        && (args.SocketFlags & SocketFlags.Truncated) == 0)
                    {
                        // The block owns the args from here (it may already be replied to and reused when Post
                        // returns); a full block makes this receive loop wait.
                        handedOver = replies.Post(args) || await WaitForRoomAsync(replies, args, stopping).ConfigureAwait(false);
                        if (handedOver)
                        {
                            WakeReplier();
                        }
                        else
                        {
                            CountDrop();
                        }
                    }
                    else if (!OnReceiveFailed(args, error))
                    {
                        break;
                    }
                }
                catch (OperationCanceledException)
                {
                    CountDrop();
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
        catch (Exception ex)
        {
            s_logger.Error(
                ex,
                "UDP receive loop on {EndPoint} failed; {Left} receive loop(s) left",
                LocalEndPoint,
                Interlocked.Decrement(ref _receiveLoopsLeft));
        }
    }

    /// <summary>Offers a datagram the full block refused, waiting until it has room (the slow path).</summary>
    /// <returns>Whether the block took the datagram; <see langword="false"/> once it declines for good (stopping).</returns>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private async ValueTask<bool> WaitForRoomAsync(ActionBlock<PooledSocketArgs> replies, PooledSocketArgs args, CancellationToken stopping)
    {
        // Announce the postponed datagram before waking the replier, so that it does not go back to waiting for a
        // queued one while this waits for room (with a bound of one, the datagram in its hands fills the block).
        Interlocked.Increment(ref _waitingForRoom);
        try
        {
            WakeReplier();
            return await replies.SendAsync(args, stopping).ConfigureAwait(false);
        }
        finally
        {
            Interlocked.Decrement(ref _waitingForRoom);
        }
    }

    /// <returns>Whether the receive loop goes on.</returns>
    private bool OnReceiveFailed(PooledSocketArgs args, SocketError error)
    {
        switch (error)
        {
            case SocketError.Success:
            case SocketError.MessageSize:
                CountDrop();
                if (s_logger.IsWarnEnabled)
                {
                    s_logger.Warn("UDP datagram from {RemoteEndPoint} dropped: larger than {MaxDatagramSize} bytes", SenderOf(args), _maxDatagramSize);
                }
                return true;
            case SocketError.ConnectionReset:
            case SocketError.ConnectionRefused:
            case SocketError.HostUnreachable:
            case SocketError.NetworkUnreachable:
            case SocketError.NetworkReset:
            case SocketError.HostDown:
                // An ICMP error about an earlier reply; the socket is fine.
                s_logger.Debug("UDP receive on {EndPoint}: {SocketError} from an earlier reply, receiving on", LocalEndPoint, error);
                return true;
            case SocketError.OperationAborted:
            case SocketError.Interrupted:
                return false;
            default:
                s_logger.Warn("UDP receive on {EndPoint} failed: {SocketError}", LocalEndPoint, error);
                return !StoppingToken.IsCancellationRequested;
        }
    }

    /// <summary>The reply block's action: sends the datagram back from its own buffer and releases the args.</summary>
    private void Reply(PooledSocketArgs args)
    {
        int length = args.BytesTransferred;
        Exception? failure = null;
        if (args.RemoteEndPoint is IPEndPoint { Port: 0 })
        {
            // No sender could be read (see ReusableIPEndPoint.Create): nobody to answer.
            failure = new SocketException((int)SocketError.AddressNotAvailable);
        }
        else
        {
            failure = TrySend(args, length);
        }

        EndReply(args, length, failure);
        WaitForNextDatagram();
    }

    /// <summary>Sends the datagram in <paramref name="args"/> back to its sender.</summary>
    /// <returns>What the send threw, or <see langword="null"/> when it succeeded.</returns>
    private Exception? TrySend(PooledSocketArgs args, int length)
    {
        try
        {
            // A synchronous send: a datagram socket takes the datagram or fails at once (it waits only while its
            // send buffer is full), and to the address the receive left in the args' endpoint, already serialized.
            ReadOnlySpan<byte> datagram = args.OwnBuffer.AsSpan(0, length);
            if (args.RemoteEndPoint is ReusableIPEndPoint sender)
            {
                _socket!.SendTo(datagram, SocketFlags.None, sender.SocketAddress);
            }
            else
            {
                // A sender the reusable endpoint could not take in place (see ReusableIPEndPoint.Create).
                _socket!.SendTo(datagram, SocketFlags.None, args.RemoteEndPoint!);
            }

            return null;
        }
        catch (Exception ex)
        {
            return ex;
        }
    }

    /// <summary>Counts and logs a finished reply and returns its args to the pool.</summary>
    private void EndReply(PooledSocketArgs args, int length, Exception? exception)
    {
        try
        {
            if (exception is null)
            {
                CountEcho(length);
                if (s_logger.IsTraceEnabled)
                {
                    s_logger.Trace("UDP echoed {Bytes} bytes to {RemoteEndPoint}", length, SenderOf(args));
                }
            }
            else
            {
                CountDrop();
                switch (exception)
                {
                    case SocketException socketException:
                        if (s_logger.IsDebugEnabled)
                        {
                            s_logger.Debug("UDP reply to {RemoteEndPoint} failed: {SocketError}", SenderOf(args), socketException.SocketErrorCode);
                        }
                        break;
                    case ObjectDisposedException:
                        // The socket was closed at the end of the stop grace period.
                        break;
                    default:
                        if (s_logger.IsWarnEnabled)
                        {
                            s_logger.Warn(exception, "UDP reply to {RemoteEndPoint} failed", SenderOf(args));
                        }
                        break;
                }
            }
        }
        finally
        {
            Pool.Release(args.Slot);
        }
    }

    /// <summary>
    /// Called by the reply block's action after a reply when no datagram is queued: waits briefly for the next
    /// one, so that the block's processing task goes on instead of ending.
    /// </summary>
    /// <remarks>
    /// <para>
    /// An <see cref="ActionBlock{TInput}"/> ends its processing task as soon as its queue is empty, and the next
    /// datagram posted starts a new <see cref="Task"/>. A server that keeps up with its load finds its queue
    /// empty after most replies, so that costs about one Task (64 bytes) per datagram. Waiting here instead
    /// keeps one task, and its thread, for as long as datagrams keep coming; after <see cref="s_replierLinger"/>
    /// without one, or once the server stops, the action returns and the task ends as usual.
    /// </para>
    /// <para>
    /// Handshake, lock-free: the replier resets the event, publishes <see cref="_replierWaiting"/> = 1 with a
    /// full fence, then checks the queue and <see cref="_waitingForRoom"/>; a receive loop enqueues (or counts
    /// itself in <see cref="_waitingForRoom"/>), then swaps the flag back to 0 with CompareExchange, a full fence,
    /// and sets the event if it was 1. So either the replier sees the datagram, or the receive loop sees the flag
    /// and wakes it: no datagram waits for the linger to run out. A late set only makes a later wait return early.
    /// A datagram refused by a full block is not in the queue: it is taken from its sender only once this
    /// action returns (with a bound of one, the datagram just replied to is what fills the block), hence the
    /// second condition.
    /// </para>
    /// </remarks>
    private void WaitForNextDatagram()
    {
        Debug.Assert(Volatile.Read(ref _replierWaiting) == 0, "Only the replier sets the flag, and it clears it before it leaves.");
        // With room for one datagram, the block stays full while this waits (its count drops only when the action
        // returns), so every datagram arriving meanwhile would take the slow, allocating SendAsync path: don't wait.
        ActionBlock<PooledSocketArgs> replies = _replies!;
        if (_maxPendingDatagrams == 1 || replies.InputCount > 0)
        {
            return;
        }

        _datagramQueued.Reset();
        Interlocked.Exchange(ref _replierWaiting, 1);
        if (replies.InputCount == 0 && Volatile.Read(ref _waitingForRoom) == 0 && !StoppingToken.IsCancellationRequested)
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

    /// <summary>An immutable copy of the args' sender for a log event (which may be formatted later), since
    /// the args' own endpoint changes with its next receive.</summary>
    private static IPEndPoint? SenderOf(PooledSocketArgs args) => args.RemoteEndPoint switch
    {
        ReusableIPEndPoint reusable => reusable.Snapshot(),
        var other => other as IPEndPoint,
    };
}
