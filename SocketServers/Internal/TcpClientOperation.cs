using System.Diagnostics.CodeAnalysis;
using System.Net.Sockets;
using System.Runtime.CompilerServices;

namespace SocketServers.Internal;

/// <summary>
/// A send or a receive of a <see cref="TcpClientConnection"/>, awaitable without allocating
/// (<see cref="AwaitableSocketArgs"/>) and reused for every operation of its kind on the connection.
/// </summary>
/// <remarks>
/// One operation at a time, guarded by <see cref="_inFlight"/>: set by <see cref="Start"/>, cleared when an operation
/// that completed at once ends, and once the awaiter has read the outcome of one that went asynchronous. A send the kernel
/// took only part of goes on with the rest before it ends. Socket calls that complete synchronously loop, never
/// recurse. The token's registration is disposed before the operation ends: a cancellation that closed the socket
/// has then finished, and turns the outcome into <see cref="OperationCanceledException"/> whatever the socket said.
/// </remarks>
internal sealed class TcpClientOperation : AwaitableSocketArgs
{
    private static readonly Action<object?, CancellationToken> s_cancel = static (state, token) =>
    {
        var operation = (TcpClientOperation)state!;
        operation._connection.Cancel(operation._isSend, token);
    };

    private readonly TcpClientConnection _connection;
    private readonly bool _isSend;

    // 1 from the start of an operation until it ends; the guard against two at once.
    private int _inFlight;

    // The operation's token and its registration; written by the operation's own thread only.
    private CancellationToken _token;
    private CancellationTokenRegistration _registration;

    // A socket call that threw instead of starting (the socket closed under it): the operation ends with it.
    private Exception? _thrown;

    public TcpClientOperation(TcpClientConnection connection, bool isSend)
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

        ResetSource();
        short version = Version;
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
            SetResult(result);
        }
        else
        {
            SetException(failure);
        }
    }

    // The outcome is read: the next operation may start.
    protected override void OnOutcomeRead() => Volatile.Write(ref _inFlight, 0);

    /// <summary>Makes socket calls until one is pending (false) or the operation is done (true).</summary>
    private bool Drive()
    {
        do
        {
            try
            {
                if (_isSend ? _connection.Socket.SendAsync(this) : _connection.Socket.ReceiveAsync(this))
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
        if (token.IsCancellationRequested && _connection.WasCanceled)
        {
            failure = _connection.Canceled(_isSend, token);
        }
        else if (_thrown is not null || SocketError != SocketError.Success)
        {
            failure = _connection.Fail(_isSend, SocketError, _thrown);
        }
        else if (!_isSend && result == 0 && Count != 0)
        {
            _connection.OnPeerEnded();
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
