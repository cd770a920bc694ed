using System.Net.Sockets;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>The object a <see cref="SocketArgsPool"/> holds: a <see cref="SocketAsyncEventArgs"/> that owns one pinned
/// buffer and can be awaited without allocating (<see cref="AwaitableSocketArgs"/>).</summary>
/// <remarks>
/// An operation started through one of the <c>*Async(Socket)</c> methods returns a <see cref="ValueTask"/> backed by
/// this object: completed at once when the socket finished synchronously (the caller loops, never recurses), pending
/// otherwise and signalled from <see cref="OnCompleted"/>. At most one operation is outstanding at a time, the rule
/// of <see cref="SocketAsyncEventArgs"/> anyway. An operation started directly on a <see cref="Socket"/> (the classic
/// pattern) still raises <see cref="SocketAsyncEventArgs.Completed"/>.
/// </remarks>
internal sealed class PooledSocketArgs : AwaitableSocketArgs
{
    private static readonly Func<Socket, SocketAsyncEventArgs, bool> s_accept = static (socket, args) => socket.AcceptAsync(args);
    private static readonly Func<Socket, SocketAsyncEventArgs, bool> s_receive = static (socket, args) => socket.ReceiveAsync(args);
    private static readonly Func<Socket, SocketAsyncEventArgs, bool> s_send = static (socket, args) => socket.SendAsync(args);
    private static readonly Func<Socket, SocketAsyncEventArgs, bool> s_receiveFrom = static (socket, args) => socket.ReceiveFromAsync(args);
    private static readonly Func<Socket, SocketAsyncEventArgs, bool> s_sendTo = static (socket, args) => socket.SendToAsync(args);

    // The endpoint receive-froms report senders in; created on first use, kept for the life of the object.
    private ReusableIPEndPoint? _sender;

    // 1 while an operation started through Start is pending: its completion completes the awaitable instead of
    // raising Completed. Written before the operation starts and exchanged back to 0 exactly once.
    private int _awaiting;

    /// <summary>The address the datagram in this args was sent to, which the reply leaves from: set by a UDP server on a
    /// wildcard address (see <see cref="PacketInfoSocket"/>), unknown otherwise. A field, so that a receive fills it in place.</summary>
    public PacketInfoSocket.LocalAddress ReplySource;

    /// <summary>The length of the datagram in this args' buffer, for its reply: set by a UDP receive loop before it hands
    /// the args over.</summary>
    public int DatagramLength;

    /// <summary>What a UDP handler's deferred reply to the datagram in this args stands on: made by the first deferral,
    /// used again by every later one.</summary>
    public UdpReplyDeferral? Deferral;

    public PooledSocketArgs(byte[] buffer)
    {
        OwnBuffer = buffer;
        if (buffer.Length != 0)
        {
            SetBuffer(buffer, 0, buffer.Length);
        }
    }

    /// <summary>The buffer this args was created with; <see cref="SocketArgsPool"/> restores it on release.</summary>
    public byte[] OwnBuffer { get; }

    /// <summary>The pool slot this args travels with (kept in <see cref="SocketAsyncEventArgs.UserToken"/>).</summary>
    public PoolSlot<SocketAsyncEventArgs> Slot => (PoolSlot<SocketAsyncEventArgs>)UserToken!;

    /// <summary>
    /// The endpoint this args' receive-froms update in place (see <see cref="ReusableIPEndPoint"/>): set it as
    /// <see cref="SocketAsyncEventArgs.RemoteEndPoint"/> before each receive-from. Created on first use and kept
    /// across pool rentals, so only the first receive of each args allocates it.
    /// </summary>
    /// <param name="family">The receiving socket's address family.</param>
    /// <returns>The same object on every call for the same family.</returns>
    public ReusableIPEndPoint SenderEndPoint(AddressFamily family)
    {
        if (_sender is { } sender && sender.AddressFamily == family)
        {
            return sender;
        }

        return _sender = new ReusableIPEndPoint(family);
    }

    public ValueTask AcceptAsync(Socket listener) => Start(listener, s_accept);

    public ValueTask ReceiveAsync(Socket socket) => Start(socket, s_receive);

    public ValueTask SendAsync(Socket socket) => Start(socket, s_send);

    public ValueTask ReceiveFromAsync(Socket socket) => Start(socket, s_receiveFrom);

    public ValueTask SendToAsync(Socket socket) => Start(socket, s_sendTo);

    private ValueTask Start(Socket socket, Func<Socket, SocketAsyncEventArgs, bool> operation)
    {
        ResetSource();
        Volatile.Write(ref _awaiting, 1);
        bool pending;
        try
        {
            pending = operation(socket, this);
        }
        catch
        {
            Volatile.Write(ref _awaiting, 0);
            throw;
        }

        if (pending)
        {
            return new ValueTask(this, Version);
        }

        Volatile.Write(ref _awaiting, 0);
        return default;
    }

    // An override, in place for the life of the object: no handler is subscribed per operation.
    protected override void OnCompleted(SocketAsyncEventArgs e)
    {
        if (Interlocked.Exchange(ref _awaiting, 0) == 1)
        {
            SetResult(0);
        }
        else
        {
            base.OnCompleted(e);
        }
    }
}
