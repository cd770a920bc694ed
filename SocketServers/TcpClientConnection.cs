using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
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
    private readonly TcpClientOperation _receive;
    private readonly TcpClientOperation _send;
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
        _receive = new TcpClientOperation(this, isSend: false);
        _send = new TcpClientOperation(this, isSend: true);
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

    /// <summary>Gets whether a cancellation in flight broke the connection.</summary>
    internal bool WasCanceled => Volatile.Read(ref _failure) is OperationCanceledException;

    /// <summary>Makes the exception a failed socket call ends its operation with, and breaks the connection with it.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    internal Exception Fail(bool isSend, SocketError error, Exception? thrown)
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
    internal void Cancel(bool isSend, CancellationToken token)
    {
        if (Break(Canceled(isSend, token)))
        {
            _pool.Logger.ClientConnectionCanceled(Id, RemoteEndPoint);
        }
    }

    /// <summary>Makes the exception an operation cancelled in flight ends with.</summary>
    internal OperationCanceledException Canceled(bool isSend, CancellationToken token)
        => new($"A {(isSend ? "send to" : "receive from")} {RemoteEndPoint} was cancelled; the connection is closed.", null, token);

    /// <summary>Notes that a receive found the end of the peer's stream, which breaks the connection.</summary>
    internal void OnPeerEnded()
    {
        _ended = true;
        _pool.Logger.ClientConnectionEnded(Id, RemoteEndPoint);
    }

    /// <summary>Makes the exception an operation on a connection broken by an earlier failure ends with.</summary>
    internal Exception Broken() => Volatile.Read(ref _failure) switch
    {
        ObjectDisposedException => new ObjectDisposedException(ToString()),
        { } failure => new IOException($"{this} is broken: {failure.Message}", failure),
        null => new IOException($"{this} is broken: the peer ended its stream."),
    };
}
