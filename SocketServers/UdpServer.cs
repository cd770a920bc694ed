using System.Diagnostics.CodeAnalysis;
using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>
/// A UDP server for a protocol of the user's: a <see cref="UdpDatagramHandler"/> answers every datagram, and the reply
/// goes back to its sender. <see cref="UdpEchoServer"/> is the one whose handler echoes.
/// </summary>
/// <remarks>
/// Each datagram is received into a pooled <see cref="SocketAsyncEventArgs"/>'s buffer, which the handler's reply
/// overwrites; <see cref="UdpServerOptions.Processing"/> chooses threads or a reply block, and memory never grows
/// with the load. Loop-prone, oversized and over-rate datagrams are dropped and counted. SocketServers/README.md
/// says how receives share the port, what is logged, and how failed loops restart. Every member is thread-safe.
/// </remarks>
public partial class UdpServer : SocketServer
{
    private readonly IPEndPoint _endPoint;
    private readonly int _maxDatagramSize;
    private readonly int _concurrentReceives;
    private readonly int _maxPendingDatagrams;
    private readonly UdpProcessing _processing;
    private readonly UdpDatagramHandler _handler;

    // SO_RCVBUF to ask for; 0 for the system's.
    private readonly int _receiveBufferSize;

    // One, or with ReusePort on Linux one per receive.
    private readonly int _socketCount;

    // Bound to a wildcard address, where Linux lets replies leave from the address each datagram was sent to.
    private readonly bool _replyFromDestination;

    // How each datagram ended: counted, metered and logged.
    private readonly UdpDatagramOutcomes _outcomes;

    // Which datagrams are answered, and what a receive loop does after each receive.
    private readonly UdpDatagramFilter _filter;

    // The bound sockets (see _socketCount); set by StartCore before any receive starts.
    private Socket[] _sockets = [];

    // Completes when every receive loop (or thread) has ended and returned its args.
    private Task _receiveLoops = Task.CompletedTask;

    /// <summary>Creates a UDP server that answers datagrams with <paramref name="handler"/>; it does not bind until
    /// <see cref="SocketServer.StartAsync"/>.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="handler">What answers each datagram; called from several threads at once.</param>
    /// <param name="logger">Where the server logs: start and stop at Information, ICMP reports and failed replies at
    /// Debug, each reply at Trace, dropped datagrams and failures at Warning and Error; <see langword="null"/> for
    /// nowhere.</param>
    /// <exception cref="ArgumentNullException"><paramref name="options"/> or <paramref name="handler"/> is <see langword="null"/>.</exception>
    [SuppressMessage("ApiDesign", "RS0022", Justification = "SocketServer has no protected members for a subclass to reach.")]
    public UdpServer(UdpServerOptions options, UdpDatagramHandler handler, ILogger? logger = null)
        : this(options, handler, logger, time: null, poolKind: "udp-args")
    {
    }

    /// <summary>Creates a UDP server whose per-sender reply limit runs on a test's clock.</summary>
    /// <param name="options">The settings, copied now.</param>
    /// <param name="handler">What answers each datagram.</param>
    /// <param name="logger">Where the server logs; <see langword="null"/> for nowhere.</param>
    /// <param name="time">The clock of the per-sender reply limit's windows; <see langword="null"/> for the system's.</param>
    /// <param name="poolKind">The kind in the args pool's name (<c>udp-args@127.0.0.1:7007</c>).</param>
    private protected UdpServer(UdpServerOptions options, UdpDatagramHandler handler, ILogger? logger, TimeProvider? time, string poolKind)
        : base(
            options ?? throw new ArgumentNullException(nameof(options)),
            bufferSize: options.MaxDatagramSize + 1, // one spare byte shows a datagram that did not fit
            poolKind,
            logger)
    {
        ArgumentNullException.ThrowIfNull(handler);
        _handler = handler;
        _outcomes = new UdpDatagramOutcomes(this, Count, Logger, IsEcho);
        _endPoint = options.EndPoint;
        _maxDatagramSize = options.MaxDatagramSize;
        _concurrentReceives = ReceivesFor(options);
        _maxPendingDatagrams = options.MaxPendingDatagrams;
        _processing = options.Processing;
        _filter = new UdpDatagramFilter(options, new MillisecondClock(time ?? TimeProvider.System), this, Logger, _outcomes, StoppingToken);
        _socketCount = SocketsFor(options);
        _receiveBufferSize = options.ReceiveBufferSize;
        _replyFromDestination = PacketInfoSocket.IsSupported && (options.Address.Equals(IPAddress.Any) || options.Address.Equals(IPAddress.IPv6Any));
    }

    /// <inheritdoc/>
    public override ProtocolType Protocol => ProtocolType.Udp;

    private protected override string HandlerTypeName => _handler.GetType().Name;

    /// <summary>How many receives the server makes: <see cref="UdpServerOptions.ConcurrentReceives"/>, or the
    /// number it stands for.</summary>
    internal int ConcurrentReceives => _concurrentReceives;

    /// <summary>How many sockets the server has bound; 0 before it starts.</summary>
    internal int SocketCount => Volatile.Read(ref _sockets).Length;

    private protected override IPEndPoint StartCore()
    {
        Socket[] sockets = BindSockets(_socketCount);
        var bound = (IPEndPoint)sockets[0].LocalEndPoint!;
        // Past the receives' own args, the pending datagrams': queued for the reply block, or deferred by the handler
        // (which echo never does).
        CreatePool(bound, _processing == UdpProcessing.ReplyBlock || !IsEcho
            ? PendingCapacity(_maxPendingDatagrams, _socketCount) + _concurrentReceives
            : _concurrentReceives);
        _filter.Bound(bound.Port);
        _sockets = sockets;
        try
        {
            _receiveLoops = Task.WhenAll(_processing == UdpProcessing.ReplyBlock ? StartReplyBlock(sockets) : StartReceiveThreads(sockets));
        }
        catch
        {
            // A thread that could not start: the server stays unstarted, so close the sockets now, which ends the
            // loops already running (they find them closed and return their args).
            CloseSockets();
            _sockets = [];
            throw;
        }

        Logger.UdpListening(Name, bound, _processing, _maxDatagramSize, _concurrentReceives, sockets.Length, sockets[0].ReceiveBufferSize, _filter.DroppedSourcesText());
        return bound;
    }

    private protected override Task StopReceivingAsync()
    {
        // The stopping token is already cancelled. Datagrams already received are still answered.
        if (_processing == UdpProcessing.ReplyBlock)
        {
            StopReplyBlock();
        }
        else
        {
            WakeReceiveThreads();
        }

        return Task.CompletedTask;
    }

    private protected override async Task DrainAsync()
    {
        await (_processing == UdpProcessing.ReplyBlock ? ReplyBlockCompletion : _receiveLoops).ConfigureAwait(false);

        // No handler is called any more, so no reply is deferred from here on: wait for those still out.
        await DeferredRepliesEndedAsync().ConfigureAwait(false);
    }

    private protected override void Abort()
    {
        Logger.UdpGracePeriodOver(Name, LocalEndPoint);
        CloseSockets();

        // A deferred reply that ends later, sent or not, is counted as dropped, its args returned then.
        StopWaitingForDeferredReplies();
    }

    private protected override async Task CloseAsync(bool handlerCallsLeft)
    {
        // Closing the sockets completes the pending receives and wakes blocked ones; each loop then returns its args. A
        // receive thread still in a handler's call ends when the call does.
        CloseSockets();
        if (!handlerCallsLeft)
        {
            await _receiveLoops.ConfigureAwait(false);
        }

        DisposeReplyBlock();
        Logger.UdpStopped(Name, LocalEndPoint, Counters);
    }

    /// <summary>How many receives a server with <paramref name="options"/> makes: the options' number, but with
    /// <see cref="UdpProcessing.ReplyBlock"/> one per socket.</summary>
    /// <remarks>.NET's socket engine completes one socket's asynchronous receives one at a time, and keeps an operation
    /// for only one of them pending: every further one pending on the socket allocates another.</remarks>
    private static int ReceivesFor(UdpServerOptions options)
        => options.Processing == UdpProcessing.ReplyBlock ? SocketsFor(options) : options.EffectiveConcurrentReceives;

    /// <summary>How many sockets a server with <paramref name="options"/> binds: one for all its receives, unless
    /// <see cref="SocketServerOptions.ReusePort"/> shares the port (Linux), when each receive has its own.</summary>
    /// <remarks>Sockets of one port spread over by the kernel (SO_REUSEPORT) are open to any later socket of the same
    /// user that asks for it too; without ReusePort the port must stay this server's alone, so one socket.</remarks>
    internal static int SocketsFor(UdpServerOptions options)
        => options.ReusePort && OperatingSystem.IsLinux() ? options.EffectiveConcurrentReceives : 1;

    /// <summary>Binds and sets up the server's <paramref name="count"/> sockets, which share the port when there are
    /// several; a failure leaves none open.</summary>
    private Socket[] BindSockets(int count)
    {
        var sockets = new Socket[count];
        int bound = 0;
        try
        {
            IPEndPoint endPoint = _endPoint;
            for (; bound < count; bound++)
            {
                Socket socket = sockets[bound] = BindSocket(endPoint);
                endPoint = (IPEndPoint)socket.LocalEndPoint!;
                if (_replyFromDestination)
                {
                    PacketInfoSocket.ReportDestinations(socket);
                }

                if (_receiveBufferSize > 0)
                {
                    socket.ReceiveBufferSize = _receiveBufferSize;
                }
            }

            return sockets;
        }
        catch
        {
            foreach (Socket socket in sockets.AsSpan(0, bound))
            {
                socket.Dispose();
            }

            throw;
        }
    }

    private void CloseSockets()
    {
        foreach (Socket socket in _sockets)
        {
            socket.Dispose();
        }
    }

    /// <summary>Has the handler answer the datagram in <paramref name="args"/>, and sends its reply back to the sender from
    /// <paramref name="socket"/>, and on a wildcard address from the address the datagram was sent to.</summary>
    /// <param name="socket">The socket the datagram came in on.</param>
    /// <param name="args">The args holding the datagram in its buffer.</param>
    /// <param name="length">The datagram's length; on return, the reply's, or <see cref="UdpDatagramHandler.NoReply"/>
    /// for none.</param>
    /// <param name="failure">What the handler or the send threw, or <see langword="null"/> when it succeeded.</param>
    /// <returns><see langword="false"/> when the handler deferred the reply: the args is then the deferral's to count
    /// and return, not the caller's.</returns>
    private bool TryReply(Socket socket, PooledSocketArgs args, ref int length, out Exception? failure)
    {
        if (args.RemoteEndPoint is IPEndPoint { Port: 0 })
        {
            // No sender could be read (see ReusableIPEndPoint.Create): nobody to answer.
            failure = new SocketException((int)SocketError.AddressNotAvailable);
            return true;
        }

        try
        {
            length = _handler.OnDatagram(new UdpDatagram(args.OwnBuffer.AsSpan(0, _maxDatagramSize), length, args.RemoteEndPoint!, this, socket, args));
        }
        catch (Exception ex)
        {
            length = UdpDatagramHandler.NoReply;
            if (args.Deferral?.TakeDeferred() == true)
            {
                // Deferred, then threw: the handle may have gone on to other code, which owns the buffer until it
                // ends the reply; the exception is reported, the datagram counted when the reply ends.
                _outcomes.ReplyFaulted(ex, byHandler: true);
                failure = null;
                return false;
            }

            SocketServerMetrics.Error(this, "handler", SocketServerMetrics.ErrorType(ex));
            failure = ex;
            return true;
        }

        if (args.Deferral?.TakeDeferred() == true)
        {
            failure = null;
            return false;
        }

        if (length == UdpDatagramHandler.NoReply)
        {
            failure = null;
            return true;
        }

        if ((uint)length > (uint)_maxDatagramSize)
        {
            failure = new InvalidOperationException($"{_handler.GetType().Name}.OnDatagram returned {length}, not a reply length from 0 to {_maxDatagramSize} or NoReply.");
            length = UdpDatagramHandler.NoReply;
            return true;
        }

        failure = SendReply(socket, args, length);
        return true;
    }

    /// <summary>Sends the first <paramref name="length"/> bytes of <paramref name="args"/>' buffer to the sender its
    /// receive left in it, from <paramref name="socket"/>, and on a wildcard address from the address the datagram was
    /// sent to.</summary>
    /// <returns>What the send threw, or <see langword="null"/> when it succeeded.</returns>
    private Exception? SendReply(Socket socket, PooledSocketArgs args, int length)
    {
        try
        {
            // A synchronous send: a datagram socket takes the datagram or fails at once (it waits only while its
            // send buffer is full), and to the address the receive left in the args' endpoint, already serialized.
            ReadOnlySpan<byte> datagram = args.OwnBuffer.AsSpan(0, length);
            if (args.RemoteEndPoint is ReusableIPEndPoint sender)
            {
                if (!_replyFromDestination)
                {
                    socket.SendTo(datagram, SocketFlags.None, sender.SocketAddress);
                }
                else if (PacketInfoSocket.Send(socket, datagram, sender.SocketAddress, args.ReplySource) is var error and not SocketError.Success)
                {
                    return new SocketException((int)error);
                }
            }
            else
            {
                // A sender the reusable endpoint could not take in place (see ReusableIPEndPoint.Create).
                socket.SendTo(datagram, SocketFlags.None, args.RemoteEndPoint!);
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
            _outcomes.Replied(args, length, exception);
        }
        finally
        {
            Pool.Release(args.Slot);
        }
    }
}
