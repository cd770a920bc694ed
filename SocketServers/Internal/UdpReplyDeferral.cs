using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>
/// What stands behind a <see cref="UdpDeferredReply"/>: one per pooled args, kept across rentals, used again by each
/// datagram that args receives and whose handler defers its reply.
/// </summary>
internal sealed class UdpReplyDeferral(PooledSocketArgs args, IUdpReplyOwner owner)
{
    private Socket? _socket;
    private int _datagramLength;
    private int _bufferLength;

    // Changed once per deferral, by the call that ends it (a compare-and-swap from the handle's token), so that a handle
    // from an ended deferral is stale and can neither send nor read the buffer the args has moved on with.
    private int _token;

    // Who holds the args while it is deferred: the receive loop still in the handler's call, and the reply. Each lets go
    // once (Interlocked, a full fence); the last to do so returns the args, so it is never reused while either holds it.
    private int _holders;

    // Set by Defer during the handler's call and read by the loop that made the call, on the same thread.
    private bool _deferred;

    /// <summary>Gets the token of the deferral under way, or of the next one.</summary>
    public int Token => Volatile.Read(ref _token);

    /// <summary>Defers the reply to the datagram in the args; called during the handler's call.</summary>
    /// <exception cref="InvalidOperationException">The reply to this datagram is deferred already.</exception>
    public UdpDeferredReply Defer(Socket socket, int datagramLength, int bufferLength)
    {
        if (_deferred)
        {
            throw new InvalidOperationException("The reply to this datagram is deferred already.");
        }

        _socket = socket;
        _datagramLength = datagramLength;
        _bufferLength = bufferLength;
        Volatile.Write(ref _holders, 2);
        _deferred = true;
        owner.OnReplyDeferred();
        return new UdpDeferredReply(this, Token);
    }

    /// <summary>Called by the receive loop once the handler's call has returned or thrown: whether the handler deferred
    /// its reply. If it did, the loop lets go of the args, which from then on the reply returns.</summary>
    public bool TakeDeferred()
    {
        if (!_deferred)
        {
            return false;
        }

        _deferred = false;
        LetGo();
        return true;
    }

    /// <summary>Ends the deferral of token <paramref name="token"/>: sends <paramref name="length"/> bytes (0: an empty
    /// datagram) unless <see cref="UdpDatagramHandler.NoReply"/> or a failure is given, counts the outcome, and lets go
    /// of the args.</summary>
    /// <returns><see langword="false"/> when that deferral has ended already.</returns>
    public bool TryEnd(int token, int length, Exception? failure)
    {
        if (Interlocked.CompareExchange(ref _token, token + 1, token) != token)
        {
            return false;
        }

        try
        {
            if (failure is null && length != UdpDatagramHandler.NoReply)
            {
                failure = owner.SendReply(_socket!, args, length);
            }

            owner.CountDeferredReply(args, length, failure);
        }
        finally
        {
            LetGo();
            owner.OnDeferredReplyEnded();
        }

        return true;
    }

    /// <summary>Throws unless the deferral of token <paramref name="token"/> is still under way.</summary>
    public void ThrowIfEnded(int token)
    {
        if (Token != token)
        {
            throw new InvalidOperationException("This deferred reply has ended: it was sent or disposed.");
        }
    }

    /// <summary>Gets the datagram's bytes.</summary>
    public ReadOnlyMemory<byte> Data(int token)
    {
        ThrowIfEnded(token);
        return args.OwnBuffer.AsMemory(0, _datagramLength);
    }

    /// <summary>Gets the buffer the reply is written to, which starts with the datagram.</summary>
    public Memory<byte> Buffer(int token)
    {
        ThrowIfEnded(token);
        return args.OwnBuffer.AsMemory(0, _bufferLength);
    }

    /// <summary>Gets the sender, which no receive changes while the reply is deferred.</summary>
    public System.Net.EndPoint RemoteEndPoint(int token)
    {
        ThrowIfEnded(token);
        return args.RemoteEndPoint!;
    }

    /// <summary>Gets the largest reply, in bytes.</summary>
    public int BufferLength => _bufferLength;

    private void LetGo()
    {
        if (Interlocked.Decrement(ref _holders) == 0)
        {
            owner.Release(args);
        }
    }
}
