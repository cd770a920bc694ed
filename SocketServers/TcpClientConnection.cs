using System.Diagnostics.CodeAnalysis;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading.Tasks.Sources;
using Microsoft.Extensions.Logging;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>One connection of a <see cref="TcpClientPool"/>: a connected TCP socket to send requests on and read replies
/// from, rented through the pool's <see cref="PoolLib.PoolSlot{T}"/>.</summary>
/// <remarks>
/// <para>
/// <see cref="SendAsync"/> and <see cref="ReceiveAsync"/> run on operation objects the connection owns and reuses, so
/// neither allocates in steady state. One send and one receive may be in flight at once, from any threads; a second
/// send while one is in flight, or a second receive, throws <see cref="InvalidOperationException"/>. The properties
/// may be read from any thread.
/// </para>
/// <para>
/// A connection breaks, for good, when a send or receive fails, when one is cancelled while in flight (its socket is
/// closed, since the peer may still answer the request), when a receive finds the end of the peer's stream, and when
/// it is disposed. A broken connection is never handed out again: its pool closes it at the next take that finds it
/// idle, or at once when its rental ends with <see cref="PoolLib.PoolSlot{T}.Discard"/>. Neither is an idle
/// connection that has something to read (the peer closed it, reset it, or sent bytes no request asked for), nor
/// one released with a send or receive still in flight.
/// </para>
/// </remarks>
public sealed class TcpClientConnection : IDisposable
{
    private readonly Socket _socket;
    private readonly Operation _receive;
    private readonly Operation _send;
    private readonly TcpClientPool _pool;

    // The first failure that broke the connection (a socket error, a cancellation, a disposal); null while it works.
    // Set once, by CompareExchange, by whichever thread breaks it first: that thread closes the socket and logs.
    private Exception? _failure;

    // Set once a receive has found the end of the peer's stream.
    private volatile bool _ended;

    // 1 once Dispose has begun.
    private int _disposed;

    internal TcpClientConnection(Socket socket, long id, TcpClientPool pool)
    {
        _socket = socket;
        _pool = pool;
        Id = id;
        RemoteEndPoint = socket.RemoteEndPoint!;
        LocalEndPoint = socket.LocalEndPoint!;
        _receive = new Operation(this, isSend: false);
        _send = new Operation(this, isSend: true);
    }

    /// <summary>Gets the connection's number, unique within its pool and counted from 1 in the order the pool connected
    /// them, as log lines show it.</summary>
    public long Id { get; }

    /// <summary>Gets the address and port of the server this connection is connected to (for a pool that connects to a
    /// name, the address it resolved to).</summary>
    public EndPoint RemoteEndPoint { get; }

    /// <summary>Gets the local address and port of this connection.</summary>
    public EndPoint LocalEndPoint { get; }

    /// <summary>Gets the connection's socket, for socket options and diagnostics.</summary>
    /// <remarks>Sending or receiving on it directly bypasses what the connection knows of its failures; closing it
    /// breaks the connection.</remarks>
    public Socket Socket => _socket;

    /// <summary>Gets whether the connection is broken: a send or receive failed or was cancelled while in flight, a
    /// receive found the end of the peer's stream, or the connection was disposed. A broken connection is never handed
    /// out again.</summary>
    public bool IsBroken => _ended || Volatile.Read(ref _failure) is not null;

    /// <summary>Sends every byte of <paramref name="buffer"/>.</summary>
    /// <param name="buffer">The bytes; the caller may reuse them once the task has completed.</param>
    /// <param name="cancellationToken">Cancels the send; a send cancelled in flight closes the connection.</param>
    /// <returns>A task that completes, most often at once, when the kernel has taken every byte; it waits while the
    /// kernel's send buffer is full.</returns>
    /// <exception cref="InvalidOperationException">Another send on this connection is in flight.</exception>
    /// <exception cref="ObjectDisposedException">The connection is disposed.</exception>
    /// <exception cref="IOException">The send failed (its <see cref="Exception.InnerException"/> is the
    /// <see cref="SocketException"/>), or the connection broke before it.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    public ValueTask SendAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
    {
        if (_send.Start(MemoryMarshal.AsMemory(buffer), cancellationToken, out _, out Exception? failure) is { } version)
        {
            return new ValueTask(_send, version);
        }

        return failure is null ? default : ValueTask.FromException(failure);
    }

    /// <summary>Receives what has arrived into <paramref name="buffer"/>, waiting until at least a byte has, or until
    /// the peer ends its stream.</summary>
    /// <param name="buffer">Where the bytes go.</param>
    /// <param name="cancellationToken">Cancels the receive; a receive cancelled in flight closes the connection.</param>
    /// <returns>How many bytes were received; 0 when the peer has ended its stream (the connection is then broken). An
    /// empty <paramref name="buffer"/> waits until there is something to read, reads nothing and returns 0: a wait that
    /// holds no buffer.</returns>
    /// <exception cref="InvalidOperationException">Another receive on this connection is in flight.</exception>
    /// <exception cref="ObjectDisposedException">The connection is disposed.</exception>
    /// <exception cref="IOException">The receive failed (its <see cref="Exception.InnerException"/> is the
    /// <see cref="SocketException"/>), or the connection broke before it.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    public ValueTask<int> ReceiveAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        if (_receive.Start(buffer, cancellationToken, out int received, out Exception? failure) is { } version)
        {
            return new ValueTask<int>(_receive, version);
        }

        return failure is null ? new ValueTask<int>(received) : ValueTask.FromException<int>(failure);
    }

    /// <summary>Closes the connection; an operation in flight fails with <see cref="ObjectDisposedException"/>. Calling it
    /// again does nothing.</summary>
    /// <remarks>The pool disposes the connections it discards; a renter that disposes one breaks it, and the pool then
    /// discards it.</remarks>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        Break(new ObjectDisposedException(ToString()));
        _receive.Dispose();
        _send.Dispose();
        _pool.Logger.ClientConnectionClosed(Id, RemoteEndPoint);
    }

    /// <summary>Gets a short description for logs: the connection's number and both ends.</summary>
    /// <returns>For example <c>TCP client connection 3 127.0.0.1:40312 to 127.0.0.1:6379</c>.</returns>
    public override string ToString() => $"TCP client connection {Id} {LocalEndPoint} to {RemoteEndPoint}";

    /// <summary>
    /// Says whether an idle connection may be handed out: it is not broken, has no operation in flight, and has nothing
    /// to read. A readable idle socket has either been closed or reset by the peer, or holds bytes no request asked
    /// for, which would pass for the reply to the next one. One non-blocking poll, no round trip.
    /// </summary>
    internal bool IsReusable()
    {
        if (IsBroken || _send.InFlight || _receive.InFlight)
        {
            return false;
        }

        bool readable;
        int unread;
        try
        {
            readable = _socket.Poll(0, SelectMode.SelectRead);
            unread = readable ? _socket.Available : 0;
        }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException)
        {
            return false;
        }

        if (!readable)
        {
            return true;
        }

        if (unread == 0)
        {
            _pool.Logger.ClientConnectionEndedIdle(Id, RemoteEndPoint);
        }
        else if (_pool.Logger.IsEnabled(LogLevel.Warning) && _pool.Warnings.TryAcquire(out long suppressed))
        {
            _pool.Logger.ClientConnectionUnreadBytes(Id, RemoteEndPoint, unread, LogRateLimiter.SuppressedNote(suppressed));
        }

        return false;
    }

    /// <summary>Breaks the connection with <paramref name="failure"/> unless it is broken already, and closes the
    /// socket, which ends an operation in flight.</summary>
    /// <returns>Whether this call broke it.</returns>
    private bool Break(Exception failure)
    {
        if (Interlocked.CompareExchange(ref _failure, failure, null) is not null)
        {
            return false;
        }

        _socket.Dispose();
        return true;
    }

    /// <summary>Makes the exception a failed socket call ends its operation with, and breaks the connection with it.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private Exception Fail(bool isSend, SocketError error, Exception? thrown)
    {
        string operation = isSend ? "Sending to" : "Receiving from";
        Exception failure = thrown switch
        {
            null => new IOException($"{operation} {RemoteEndPoint} failed: {error}.", new SocketException((int)error)),
            ObjectDisposedException => new IOException($"{operation} {RemoteEndPoint} failed: its socket was closed.", thrown),
            _ => thrown,
        };
        if (Break(failure))
        {
            if (_pool.Logger.IsEnabled(LogLevel.Warning) && _pool.Warnings.TryAcquire(out long suppressed))
            {
                _pool.Logger.ClientConnectionFailed(failure, Id, RemoteEndPoint, LogRateLimiter.SuppressedNote(suppressed));
            }

            return failure;
        }

        // Broken before this socket call ended (which is why it failed): its cause says more than the abort.
        return Broken();
    }

    /// <summary>Breaks the connection for an operation cancelled in flight.</summary>
    private void Cancel(bool isSend, CancellationToken token)
    {
        if (Break(new OperationCanceledException($"A {(isSend ? "send to" : "receive from")} {RemoteEndPoint} was cancelled; the connection is closed.", null, token)))
        {
            _pool.Logger.ClientConnectionCanceled(Id, RemoteEndPoint);
        }
    }

    /// <summary>Makes the exception an operation on a connection broken by an earlier failure ends with.</summary>
    private Exception Broken() => Volatile.Read(ref _failure) switch
    {
        ObjectDisposedException => new ObjectDisposedException(ToString()),
        { } failure => new IOException($"{this} is broken: {failure.Message}", failure),
        null => new IOException($"{this} is broken: the peer ended its stream."),
    };

    /// <summary>
    /// A send or a receive, made awaitable without allocating: a <see cref="SocketAsyncEventArgs"/> that is its own
    /// <see cref="IValueTaskSource{TResult}"/>, reused for every operation of its kind
    /// on the connection.
    /// </summary>
    /// <remarks>
    /// One operation at a time, guarded by <see cref="_inFlight"/>: set by <see cref="Start"/>, cleared when the
    /// operation ends, before its result is published, so that the awaiter may start the next at once. A send the kernel
    /// took only part of goes on with the rest before it ends. Socket calls that complete synchronously loop, never
    /// recurse. The token's registration is disposed before the operation ends: a cancellation that closed the socket
    /// has then finished, and turns the outcome into <see cref="OperationCanceledException"/> whatever the socket said.
    /// </remarks>
    private sealed class Operation : SocketAsyncEventArgs, IValueTaskSource<int>, IValueTaskSource
    {
        private static readonly Action<object?, CancellationToken> s_cancel = static (state, token) =>
        {
            var operation = (Operation)state!;
            operation._connection.Cancel(operation._isSend, token);
        };

        private readonly TcpClientConnection _connection;
        private readonly bool _isSend;

        // Completed once per operation that went asynchronous; reset as each operation starts.
        private ManualResetValueTaskSourceCore<int> _source;

        // 1 from the start of an operation until it ends; the guard against two at once.
        private int _inFlight;

        // The operation's token and its registration; written by the operation's own thread only.
        private CancellationToken _token;
        private CancellationTokenRegistration _registration;

        // A socket call that threw instead of starting (the socket closed under it): the operation ends with it.
        private Exception? _thrown;

        public Operation(TcpClientConnection connection, bool isSend)
            : base(unsafeSuppressExecutionContextFlow: true)
        {
            _connection = connection;
            _isSend = isSend;
        }

        public bool InFlight => Volatile.Read(ref _inFlight) != 0;

        /// <summary>Starts an operation on <paramref name="buffer"/>.</summary>
        /// <returns>The version its outcome comes through this object with, when it went asynchronous; else
        /// <see langword="null"/>, and the outcome is <paramref name="result"/> or <paramref name="failure"/>.</returns>
        /// <exception cref="InvalidOperationException">An operation of this kind is in flight.</exception>
        public short? Start(Memory<byte> buffer, CancellationToken cancellationToken, out int result, out Exception? failure)
        {
            if (Interlocked.Exchange(ref _inFlight, 1) != 0)
            {
                ThrowConcurrent(_isSend);
            }

            result = 0;
            if (_connection.IsBroken || cancellationToken.IsCancellationRequested)
            {
                // Nothing started: a token cancelled before the call leaves the connection as it was.
                failure = cancellationToken.IsCancellationRequested ? new OperationCanceledException(cancellationToken) : _connection.Broken();
                Volatile.Write(ref _inFlight, 0);
                return null;
            }

            _source.Reset();
            short version = _source.Version;
            SetBuffer(buffer);
            _token = cancellationToken;
            if (cancellationToken.CanBeCanceled)
            {
                _registration = cancellationToken.UnsafeRegister(s_cancel, this);
            }

            if (!Drive())
            {
                failure = null;
                return version;
            }

            failure = End(out result);
            return null;
        }

        // Socket calls that complete later land here: the rest of a partial send, or the end.
        protected override void OnCompleted(SocketAsyncEventArgs e)
        {
            bool done;
            try
            {
                done = IsDone() || Drive();
            }
            catch (ObjectDisposedException disposed)
            {
                // The connection was disposed under a send the kernel took part of: the rest cannot be sent.
                _thrown = disposed;
                done = true;
            }

            if (!done)
            {
                return;
            }

            // In flight until the awaiter has read the outcome (see GetResult): a new operation's Reset must not come
            // between this SetResult and that read.
            Exception? failure = End(out int result, endsFlight: false);
            if (failure is null)
            {
                _source.SetResult(result);
            }
            else
            {
                _source.SetException(failure);
            }
        }

        int IValueTaskSource<int>.GetResult(short token)
        {
            try
            {
                return _source.GetResult(token);
            }
            finally
            {
                Volatile.Write(ref _inFlight, 0);
            }
        }

        void IValueTaskSource.GetResult(short token) => ((IValueTaskSource<int>)this).GetResult(token);

        ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _source.GetStatus(token);

        void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
            => _source.OnCompleted(continuation, state, token, flags);

        ValueTaskSourceStatus IValueTaskSource<int>.GetStatus(short token) => _source.GetStatus(token);

        void IValueTaskSource<int>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
            => _source.OnCompleted(continuation, state, token, flags);

        /// <summary>Makes socket calls until one is pending (false) or the operation is done (true).</summary>
        private bool Drive()
        {
            do
            {
                try
                {
                    if (_isSend ? _connection._socket.SendAsync(this) : _connection._socket.ReceiveAsync(this))
                    {
                        return false;
                    }
                }
                catch (Exception thrown)
                {
                    _thrown = thrown;
                    return true;
                }
            }
            while (!IsDone());

            return true;
        }

        /// <summary>Says whether the socket call just completed ends the operation; if not (a send the kernel took part
        /// of), moves the buffer past what was sent.</summary>
        private bool IsDone()
        {
            if (!_isSend || SocketError != SocketError.Success || BytesTransferred == Count)
            {
                return true;
            }

            SetBuffer(Offset + BytesTransferred, Count - BytesTransferred);
            return false;
        }

        /// <summary>Ends the operation: its result, or the exception it fails with; and its flight, unless
        /// <paramref name="endsFlight"/> leaves that to the awaiter's read of the outcome.</summary>
        private Exception? End(out int result, bool endsFlight = true)
        {
            // Waits for a cancellation callback running now, so that the socket it closes is closed before the outcome is read.
            _registration.Dispose();
            _registration = default;
            CancellationToken token = _token;
            _token = default;

            result = _isSend ? Offset + Count : BytesTransferred;
            Exception? failure = null;
            if (token.IsCancellationRequested && Volatile.Read(ref _connection._failure) is OperationCanceledException)
            {
                failure = new OperationCanceledException($"A {(_isSend ? "send to" : "receive from")} {_connection.RemoteEndPoint} was cancelled; the connection is closed.", null, token);
            }
            else if (_thrown is not null || SocketError != SocketError.Success)
            {
                failure = _connection.Fail(_isSend, SocketError, _thrown);
            }
            else if (!_isSend && result == 0 && Count != 0)
            {
                _connection._ended = true;
                _connection._pool.Logger.ClientConnectionEnded(_connection.Id, _connection.RemoteEndPoint);
            }

            _thrown = null;
            if (endsFlight)
            {
                Volatile.Write(ref _inFlight, 0);
            }

            return failure;
        }

        [DoesNotReturn, MethodImpl(MethodImplOptions.NoInlining)]
        private static void ThrowConcurrent(bool isSend) =>
            throw new InvalidOperationException($"Another {(isSend ? "send" : "receive")} on this connection is in flight: a connection takes one send and one receive at a time.");
    }
}
