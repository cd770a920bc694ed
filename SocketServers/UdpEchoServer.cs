using System.Net;
using System.Net.Sockets;
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
/// <see cref="UdpEchoServerOptions.ConcurrentReceives"/> receives are outstanding at once, each on a pooled
/// <see cref="SocketAsyncEventArgs"/>. A received datagram goes, with its args, into a bounded
/// <see cref="ActionBlock{TInput}"/> that sends the reply from the same args and returns it to the pool.
/// When <see cref="UdpEchoServerOptions.MaxPendingDatagrams"/> replies wait, the receives wait too and the
/// kernel drops what does not fit in the socket buffer, as UDP does: memory never grows with the load.
/// </para>
/// <para>
/// A datagram larger than <see cref="UdpEchoServerOptions.MaxDatagramSize"/> is dropped with a warning and
/// counted in <see cref="EchoServerCounters.Drops"/>, never echoed truncated. ICMP errors caused by earlier
/// replies (<see cref="SocketError.ConnectionReset"/>, <see cref="SocketError.ConnectionRefused"/> and the
/// like) are logged at Debug and receiving goes on.
/// </para>
/// <para>Thread safety: every member may be called from any thread.</para>
/// </remarks>
public sealed class UdpEchoServer : EchoServer
{
    private static readonly Logger s_logger = LogManager.GetCurrentClassLogger();

    private readonly IPEndPoint _endPoint;
    private readonly IPEndPoint _anyEndPoint;
    private readonly int _maxDatagramSize;
    private readonly int _concurrentReceives;
    private readonly int _maxPendingDatagrams;

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
        _anyEndPoint = new IPEndPoint(
            _endPoint.AddressFamily == AddressFamily.InterNetworkV6 ? IPAddress.IPv6Any : IPAddress.Any, 0);
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
            ReplyAsync,
            new ExecutionDataflowBlockOptions
            {
                BoundedCapacity = _maxPendingDatagrams,
                MaxDegreeOfParallelism = Environment.ProcessorCount,
            });
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
        _replies?.Complete();
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
        s_logger.Info("UDP echo server on {EndPoint} stopped: {Counters}", LocalEndPoint, Counters);
    }

    private async Task ReceiveLoopAsync(Socket socket, ActionBlock<PooledSocketArgs> replies)
    {
        // Run on the thread pool, not on the caller of StartAsync.
        await Task.CompletedTask.ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        CancellationToken stopping = StoppingToken;
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
                    args.RemoteEndPoint = _anyEndPoint;
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
                        // The block owns the args from here; a full block makes this receive loop wait.
                        handedOver = replies.Post(args)
                            || await replies.SendAsync(args, stopping).ConfigureAwait(false);
                        if (!handedOver)
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
            s_logger.Error(ex, "UDP receive loop on {EndPoint} failed; the server receives on fewer loops", LocalEndPoint);
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
                s_logger.Warn("UDP datagram from {RemoteEndPoint} dropped: larger than {MaxDatagramSize} bytes", args.RemoteEndPoint, _maxDatagramSize);
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

    private async Task ReplyAsync(PooledSocketArgs args)
    {
        PoolSlot<SocketAsyncEventArgs> slot = args.Slot;
        int length = args.BytesTransferred;
        try
        {
            args.SetBuffer(0, length);
            await args.SendToAsync(_socket!).ConfigureAwait(false);
            if (args.SocketError == SocketError.Success)
            {
                CountEcho(length);
                if (s_logger.IsTraceEnabled)
                {
                    s_logger.Trace("UDP echoed {Bytes} bytes to {RemoteEndPoint}", length, args.RemoteEndPoint);
                }
            }
            else
            {
                CountDrop();
                s_logger.Debug("UDP reply to {RemoteEndPoint} failed: {SocketError}", args.RemoteEndPoint, args.SocketError);
            }
        }
        catch (ObjectDisposedException)
        {
            CountDrop();
        }
        catch (Exception ex)
        {
            CountDrop();
            s_logger.Warn(ex, "UDP reply to {RemoteEndPoint} failed", args.RemoteEndPoint);
        }
        finally
        {
            Pool.Release(slot);
        }
    }
}
