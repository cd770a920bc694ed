using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PoolLib;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>The lifecycle and counters shared by <see cref="TcpServer"/> and <see cref="UdpServer"/>, whatever protocol
/// their handler speaks: a server whose every <see cref="SocketAsyncEventArgs"/> comes from a
/// <see cref="SocketArgsPool"/>.</summary>
/// <remarks>
/// A server starts once. <see cref="StopAsync"/> takes no new work, lets in-flight replies finish within the stop grace
/// period, closes the rest and returns when every pooled args is back in the pool; <see cref="DisposeAsync"/> stops if
/// needed and frees the pool. As an <see cref="IHostedService"/> (see <see cref="SocketServerServiceCollectionExtensions"/>),
/// the host's shutdown timeout cuts the grace period short. SocketServers/README.md says how a TCP connection drains.
/// Every member is thread-safe.
/// </remarks>
public abstract class SocketServer : IHostedService, IAsyncDisposable, IDisposable
{
    // How long a stop cut short waits for handler calls to return once their connections are closed, as Kestrel does.
    private static readonly TimeSpan s_handlerCallWaitAfterAbort = TimeSpan.FromSeconds(1);

    private readonly Lock _gate = new();
    private readonly CancellationTokenSource _stopping = new();

    // _stopping's token, taken once: a handler call the stop went on without may return after the dispose, and a
    // disposed source throws on Token (the token itself still answers IsCancellationRequested).
    private readonly CancellationToken _stoppingToken;

    // Cancelled by the token of any StopAsync call, to end the grace period; never disposed, so that a caller's
    // token cancelled at any time, even after dispose, can cancel it (it holds no timer or wait handle).
    private readonly CancellationTokenSource _gracePeriodCut = new();
    private readonly TimeSpan _stopGracePeriod;
    private readonly bool _reusePort;

    // Guarded by _gate. _state only moves forward; a failed start leaves it Created.
    private State _state;
    private Task? _stopTask;
    private bool _disposed;
    private IPEndPoint? _localEndPoint;

    // Lines about loops that failed: a fault that recurs on every restart still shows a few times a second.
    private readonly LogRateLimiter _loopFailures = new();

    // The args pool's buffer size and kind of name; the pool itself is created once the endpoint is known.
    private readonly int _poolBufferSize;
    private readonly string _poolKind;

    // Created by StartCore (CreatePool), before any loop that takes from it starts; null before the first start.
    private SocketArgsPool? _pool;

    // Set once the stop closed work in flight at the end of the grace period.
    private bool _stopCutShort;

    private protected SocketServer(SocketServerOptions options, int bufferSize, string poolKind, ILogger? logger)
    {
        Logger = logger ?? NullLogger.Instance;
        _stoppingToken = _stopping.Token;
        _stopGracePeriod = options.StopGracePeriod;
        _reusePort = options.ReusePort;
        _poolBufferSize = bufferSize;
        _poolKind = poolKind;
    }

    private enum State
    {
        Created,
        Running,
        Stopping,
        Stopped,
    }

    /// <summary>The transport: <see cref="ProtocolType.Tcp"/> or <see cref="ProtocolType.Udp"/>.</summary>
    public abstract ProtocolType Protocol { get; }

    /// <summary>The address and port the server is bound to (the real port when 0 was asked for);
    /// <see langword="null"/> before <see cref="StartAsync"/> has succeeded.</summary>
    public IPEndPoint? LocalEndPoint
    {
        get
        {
            lock (_gate)
            {
                return _localEndPoint;
            }
        }
    }

    /// <summary>Whether the server is listening and has not begun to stop.</summary>
    public bool IsRunning
    {
        get
        {
            lock (_gate)
            {
                return _state == State.Running;
            }
        }
    }

    /// <summary>A snapshot of the counters; readable at any time, also after stop and dispose.</summary>
    public SocketServerCounters Counters => Count.Snapshot(Volatile.Read(ref _pool));

    /// <summary>"TCP" or "UDP", for messages.</summary>
    private protected string ProtocolName => Protocol == ProtocolType.Tcp ? "TCP" : "UDP";

    /// <summary>What the lifecycle lines call the server: "TCP echo server" for the echo servers, else "TCP server for"
    /// the handler's type name, so that a line says which protocol's server it is about.</summary>
    private protected string Name => IsEcho ? $"{ProtocolName} echo server" : $"{ProtocolName} server for {HandlerTypeName}";

    /// <summary>Whether this is an echo server, whose handler replies with what it received.</summary>
    private protected virtual bool IsEcho => false;

    /// <summary>The name of the handler's type, for <see cref="Name"/>.</summary>
    private protected abstract string HandlerTypeName { get; }

    /// <summary>The pool every operation's args comes from; only once <see cref="CreatePool"/> has made it.</summary>
    private protected SocketArgsPool Pool => _pool!;

    /// <summary>Gets how many TCP clients wait in the listen backlog, where the platform says (Linux); 0 otherwise and for UDP.</summary>
    internal virtual long QueuedConnections => 0;

    /// <summary>The running counts behind <see cref="Counters"/>.</summary>
    private protected LiveCounters Count { get; } = new();

    /// <summary>Where the server logs; <see cref="NullLogger.Instance"/> when none was given.</summary>
    private protected ILogger Logger { get; }

    /// <summary>Cancelled when the server begins to stop.</summary>
    private protected CancellationToken StoppingToken => _stoppingToken;

    /// <summary>How long a loop of the server (accept, receive, sweep) that failed, or a receive that failed unexpectedly,
    /// waits before it goes on; a stop ends the wait at once. Long enough that a fault that recurs at once is not a busy
    /// loop, short enough that one that passes costs little service. Settable before <see cref="StartAsync"/>, for tests.</summary>
    internal TimeSpan RestartDelay { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>Gets whether the stop's grace period ran out (or its token was cancelled) with work in flight, which it
    /// then closed: TCP connections that had not finished, UDP replies not sent. A host can tell its supervisor so, as
    /// the console host does with its exit code.</summary>
    public bool StopCutShort => Volatile.Read(ref _stopCutShort);

    /// <summary>Loops started again after an unexpected exception, since start.</summary>
    internal long LoopRestarts => Count.LoopRestarts;

    /// <summary>Binds and starts serving; the returned task completes once the server is listening.</summary>
    /// <param name="cancellationToken">Checked before binding.</param>
    /// <returns>A task that completes when the server listens on <see cref="LocalEndPoint"/>.</returns>
    /// <exception cref="InvalidOperationException">The server was already started or stopped.</exception>
    /// <exception cref="ObjectDisposedException">The server was disposed.</exception>
    /// <exception cref="IOException">The address cannot be bound, for example because the port is in use;
    /// the inner exception is the <see cref="SocketException"/>. The server may then be started again.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    /// <exception cref="PlatformNotSupportedException"><see cref="SocketServerOptions.ReusePort"/> is set on a platform other than Linux.</exception>
    public Task StartAsync(CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        lock (_gate)
        {
            // Binding under the lock keeps a concurrent stop or dispose from seeing a half-started server;
            // the loops StartCore starts run on the thread pool and never wait for this lock.
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_state != State.Created)
            {
                throw new InvalidOperationException($"The {ProtocolName} server has already been started or stopped; a server starts once.");
            }

            _localEndPoint = StartCore();
            _state = State.Running;
            SocketServerMetrics.Track(this);
        }

        return Task.CompletedTask;
    }

    /// <summary>
    /// Stops the server: no new connections or datagrams are taken, in-flight replies get the stop grace
    /// period to finish, then what is left is closed. A TCP connection reads nothing more, sends back what it has
    /// read, ends its stream, and drops what the client still sends until the client closes, so that closing it
    /// resets nothing. The task completes when every pooled args is back in the pool, but for those of UDP replies
    /// still deferred when the grace period ended, which come back when their handles end them, and those of handler
    /// calls still running a second after it ended (a TCP handler learns of the end through
    /// <see cref="TcpConnection.ConnectionClosed"/>), which come back when the calls return. Calling it again, or before
    /// start, returns the same stop and starts nothing more; a later call's token can still end the grace period.
    /// </summary>
    /// <param name="cancellationToken">Cancelling it ends the grace period at once, whichever call passed it; the
    /// stop still waits for the closed operations to come back, and up to a second for handler calls.</param>
    /// <returns>A task that completes when the server has stopped.</returns>
    public Task StopAsync(CancellationToken cancellationToken = default)
    {
        Task stop;
        lock (_gate)
        {
            if (_stopTask is null)
            {
                if (_state == State.Running)
                {
                    _state = State.Stopping;
                    _stopTask = StopCoreAsync();
                }
                else
                {
                    _state = State.Stopped;
                    _stopTask = Task.CompletedTask;
                }
            }

            stop = _stopTask;
        }

        if (cancellationToken.CanBeCanceled && !stop.IsCompleted)
        {
            CancellationTokenRegistration cut = cancellationToken.UnsafeRegister(static state => ((CancellationTokenSource)state!).Cancel(), _gracePeriodCut);
            stop.ContinueWith(static (_, state) => ((CancellationTokenRegistration)state!).Dispose(), cut, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        }

        return stop;
    }

    /// <summary>Stops the server if it is running (as <see cref="StopAsync"/>) and frees its pool.
    /// Calling it again does nothing.</summary>
    /// <returns>A task that completes when the server is stopped and disposed.</returns>
    public async ValueTask DisposeAsync()
    {
        lock (_gate)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
        }

        await StopAsync().ConfigureAwait(false);
        Volatile.Read(ref _pool)?.Dispose();
        _stopping.Dispose();
        GC.SuppressFinalize(this);
    }

    /// <summary>As <see cref="DisposeAsync"/>, blocking until the server is stopped and disposed; for containers and
    /// callers that dispose synchronously. Prefer <see cref="DisposeAsync"/>.</summary>
    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    /// <inheritdoc/>
    public override string ToString() => $"{ProtocolName} server on {LocalEndPoint?.ToString() ?? "(not bound)"}";

    private async Task StopCoreAsync()
    {
        // Leave the caller's lock before doing any work.
        await Task.CompletedTask.ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        try
        {
            await _stopping.CancelAsync().ConfigureAwait(false);
            await StopReceivingAsync().ConfigureAwait(false);
            Task drained = DrainAsync();
            await drained.WaitAsync(_stopGracePeriod, _gracePeriodCut.Token).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            if (!drained.IsCompleted)
            {
                Volatile.Write(ref _stopCutShort, true);
                Abort();

                // Every socket operation has ended now, but a handler's call may not (a TCP one is told through
                // TcpConnection.ConnectionClosed): the stop does not wait on a call that ignores it.
                await drained.WaitAsync(s_handlerCallWaitAfterAbort).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
                if (!drained.IsCompleted)
                {
                    Logger.StopLeftHandlerCalls(Name, LocalEndPoint, s_handlerCallWaitAfterAbort);
                }
            }

            await CloseAsync(handlerCallsLeft: !drained.IsCompleted).ConfigureAwait(false);
        }
        finally
        {
            SocketServerMetrics.Untrack(this);
            lock (_gate)
            {
                _state = State.Stopped;
            }
        }
    }

    /// <summary>Creates and binds the socket(s), calls <see cref="CreatePool"/> and starts the loops; on failure leaves
    /// nothing open.</summary>
    private protected abstract IPEndPoint StartCore();

    /// <summary>Names a pool of this server after its kind and the endpoint the server listens on
    /// (<c>tcp-echo-args@127.0.0.1:7007</c>), so that the pools of servers in one process are told apart in metrics.</summary>
    private protected static string PoolName(string kind, IPEndPoint endPoint) => $"{kind}@{endPoint}";

    /// <summary>Creates the args pool of <paramref name="capacity"/> args, named for <paramref name="endPoint"/>; StartCore
    /// calls it once bound, before any loop starts. A pool left by a start that failed is disposed.</summary>
    private protected void CreatePool(IPEndPoint endPoint, int capacity)
        => Interlocked.Exchange(ref _pool, new SocketArgsPool(_poolBufferSize, capacity, PoolName(_poolKind, endPoint)))?.Dispose();

    /// <summary>First stop step: take no new work (close the listener, refuse new datagrams).</summary>
    private protected abstract Task StopReceivingAsync();

    /// <summary>Second stop step: a task that completes when the in-flight work is done.</summary>
    private protected abstract Task DrainAsync();

    /// <summary>Called when the grace period ends before <see cref="DrainAsync"/>: close what is left.</summary>
    private protected abstract void Abort();

    /// <summary>Last stop step: close the sockets and wait until every args is back in the pool, but for those of
    /// handler calls still running when <paramref name="handlerCallsLeft"/>, which come back when the calls end.</summary>
    private protected abstract Task CloseAsync(bool handlerCallsLeft);

    /// <summary>Creates this server's socket bound to <paramref name="endPoint"/>, listening when
    /// <paramref name="listenBacklog"/> is positive; a failure leaves nothing open, and a bind failure
    /// becomes the exception <see cref="StartAsync"/> documents.</summary>
    /// <param name="endPoint">The address and port to bind.</param>
    /// <param name="listenBacklog">The listen backlog; 0 for a socket that does not listen.</param>
    private protected Socket BindSocket(IPEndPoint endPoint, int listenBacklog = 0)
        => SocketBinding.Bind(endPoint, Protocol, ProtocolName, listenBacklog, _reusePort);

    /// <summary>Takes an args for the next operation, waiting while the pool is exhausted.</summary>
    /// <returns>The slot, or <see langword="null"/> once the server is stopping.</returns>
    private protected ValueTask<PoolSlot<SocketAsyncEventArgs>?> TakeSlotUnlessStoppingAsync() => Pool.TakeSlotUnlessStoppingAsync(StoppingToken);

    /// <summary>Runs <paramref name="loop"/> on the thread pool until it returns; when it throws, the failure is
    /// logged and counted and the loop starts again after <see cref="RestartDelay"/>, unless the server is stopping.</summary>
    /// <param name="loop">The loop; it returns when the server stops.</param>
    /// <param name="operation">Its name in the log line and the metric: <c>accept</c>, <c>receive</c> or <c>sweep</c>.</param>
    /// <returns>A task that completes when the loop has returned, or failed while the server stops; it never faults.</returns>
    private protected async Task RunRestartingAsync(Func<Task> loop, string operation)
    {
        // Run on the thread pool, not on the caller of StartAsync.
        await Task.CompletedTask.ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        while (true)
        {
            try
            {
                await loop().ConfigureAwait(false);
                return;
            }
            catch (Exception ex)
            {
                if (!OnLoopFailed(ex, operation))
                {
                    return;
                }
            }

            // The stop cancels the pause.
            await Task.Delay(RestartDelay, StoppingToken).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
            if (StoppingToken.IsCancellationRequested)
            {
                return;
            }

            Count.LoopRestarted();
        }
    }

    /// <summary>Logs and counts a loop that ended on an unexpected exception.</summary>
    /// <returns>Whether to start it again after <see cref="RestartDelay"/>: unless the server is stopping.</returns>
    private protected bool OnLoopFailed(Exception exception, string operation)
    {
        bool restart = !StoppingToken.IsCancellationRequested;
        SocketServerMetrics.Error(this, operation, SocketServerMetrics.ErrorType(exception));
        if (Logger.IsEnabled(LogLevel.Error) && _loopFailures.TryAcquire(out long suppressed))
        {
            Logger.LoopFailed(
                exception,
                ProtocolName,
                operation,
                LocalEndPoint,
                restart ? $"it starts again in {RestartDelay.TotalMilliseconds} ms" : "the server is stopping",
                LogRateLimiter.SuppressedNote(suppressed));
        }

        return restart;
    }
}
