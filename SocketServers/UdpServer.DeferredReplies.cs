using System.Net.Sockets;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>Replies a handler deferred (<see cref="UdpDatagram.DeferReply"/>): what their <see cref="UdpReplyDeferral"/>s
/// need from the server, and the count a stop waits for.</summary>
public partial class UdpServer : IUdpReplyOwner
{
    // Replies deferred and not ended yet. Once the loops have ended, a stop sets _drainingDeferred and waits for
    // _deferredEnded: each side writes, fences, then reads the other's value, so one of them completes it.
    private int _deferredReplies;
    private int _drainingDeferred;
    private readonly TaskCompletionSource _deferredEnded = new(TaskCreationOptions.RunContinuationsAsynchronously);

    // Set when the stop's grace period ends with replies still deferred: those end on a closed socket, as drops.
    private volatile bool _deferredLetGo;

    void IUdpReplyOwner.OnReplyDeferred() => Interlocked.Increment(ref _deferredReplies);

    Exception? IUdpReplyOwner.SendReply(Socket socket, PooledSocketArgs args, int length) => SendReply(socket, args, length);

    void IUdpReplyOwner.CountDeferredReply(PooledSocketArgs args, int length, Exception? failure)
    {
        try
        {
            if (_deferredLetGo)
            {
                // Still waiting when the server stopped, however the handle ends: not answered.
                _outcomes.Dropped(UdpDatagramOutcomes.DroppedStopping);
                return;
            }

            _outcomes.Replied(args, length, failure);
        }
        catch (Exception ex)
        {
            // A logger that failed: not the sender's business.
            _outcomes.ReplyFaulted(ex);
        }
    }

    void IUdpReplyOwner.Release(PooledSocketArgs args) => Pool.Release(args.Slot);

    void IUdpReplyOwner.OnDeferredReplyEnded()
    {
        if (Interlocked.Decrement(ref _deferredReplies) == 0 && Volatile.Read(ref _drainingDeferred) == 1)
        {
            _deferredEnded.TrySetResult();
        }
    }

    /// <summary>Completes once every deferred reply has ended; called by the drain, once no handler runs any more.</summary>
    private Task DeferredRepliesEndedAsync()
    {
        Volatile.Write(ref _drainingDeferred, 1);
        Interlocked.MemoryBarrier();
        if (Volatile.Read(ref _deferredReplies) == 0)
        {
            _deferredEnded.TrySetResult();
        }

        return _deferredEnded.Task;
    }

    /// <summary>Ends the drain's wait for deferred replies, at the end of the grace period.</summary>
    private void StopWaitingForDeferredReplies()
    {
        _deferredLetGo = true;
        _deferredEnded.TrySetResult();
    }
}
