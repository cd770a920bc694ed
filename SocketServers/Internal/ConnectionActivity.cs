using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>
/// What the idle and slow-connection sweep reads of a connection (<see cref="IdleAndSlowConnectionSweep"/>): when it
/// last moved, whether a handler's call or a send is under way, the bytes it has moved, and its data-rate window.
/// The connection's loop writes the activity; the sweep alone reads the window and the send queue's drain.
/// </summary>
internal sealed class ConnectionActivity
{
    private readonly MillisecondClock _clock;

    // The clock at the last completed receive or send, the end of a handler's call or the start of a send.
    private long _lastActivity;

    // Written by the loop, read by the sweep: 1 while a handler's call runs, and while a send is under way. A handler
    // at work on a reply (awaiting a backend) makes its connection busy, neither idle nor slow; one whose send waits
    // for a client that does not read does not. Leaving that work (the call's end, a send's start) counts as activity.
    private int _inHandlerCall;
    private int _sending;

    // Bytes received and sent so far, as the slow-connection sweep judges a connection; written by the loop, read by
    // the sweep. A connection streaming a reply is not slow, whatever it receives.
    private long _bytesMoved;

    // The sweep's alone: what the kernel's send queue has drained while a send waited for room (counted as moved, as
    // the send's completion later counts the same bytes, so a reader may be judged up to twice as fast), and the bytes
    // that queue held at the last sweep, or -1 when no send waited.
    private long _bytesDrained;
    private int _sendQueueAtSweep = -1;

    // The sweep's alone: the data rate over the current and the last window. A mutable struct updated in
    // place, so never readonly: a readonly field would hand the sweep a copy and the window would never move.
    private DataRateWindow _rateWindow;

    public ConnectionActivity(MillisecondClock clock)
    {
        _clock = clock;
        _lastActivity = OpenedAt = clock.Now;
        _rateWindow = new DataRateWindow(OpenedAt);
    }

    /// <summary>Gets the clock when the connection opened.</summary>
    public long OpenedAt { get; }

    /// <summary>Gets the clock now.</summary>
    public long Now => _clock.Now;

    /// <summary>Gets the clock at the last completed receive or send, end of a handler's call or start of a send.</summary>
    public long LastActivity => Volatile.Read(ref _lastActivity);

    /// <summary>Gets whether a handler's call runs.</summary>
    public bool InHandlerCall => Volatile.Read(ref _inHandlerCall) == 1;

    /// <summary>Gets whether a send is under way.</summary>
    public bool IsSending => Volatile.Read(ref _sending) == 1;

    /// <summary>Gets whether a handler's call is at work (not waiting on a send): the server owes the client a reply.</summary>
    public bool IsHandlerAtWork => InHandlerCall && !IsSending;

    /// <summary>Gets whether nothing has moved for <paramref name="milliseconds"/>.</summary>
    public bool IsQuietFor(long milliseconds) => Now - LastActivity >= milliseconds;

    public void BeginHandlerCall() => Volatile.Write(ref _inHandlerCall, 1);

    public void EndHandlerCall()
    {
        Volatile.Write(ref _inHandlerCall, 0);
        Volatile.Write(ref _lastActivity, Now);
    }

    /// <summary>Counts bytes received, or handed to the kernel to send.</summary>
    public void Moved(int bytes)
    {
        Volatile.Write(ref _lastActivity, Now);
        Volatile.Write(ref _bytesMoved, _bytesMoved + bytes);
    }

    public void BeginSend()
    {
        Volatile.Write(ref _sending, 1);
        Volatile.Write(ref _lastActivity, Now);
    }

    public void EndSend() => Volatile.Write(ref _sending, 0);

    /// <summary>Sweep only: restarts the data-rate window, so that the connection is judged afresh from now on.</summary>
    public void RestartRateWindow(long now) => _rateWindow.Restart(now, Volatile.Read(ref _bytesMoved) + _bytesDrained);

    /// <summary>Sweep only: while a send waits for room in the kernel's queue, counts the queue's drain since the last
    /// sweep as bytes moved and as activity, so that a client reading a long reply steadily is neither idle nor slow.</summary>
    public void NoteSendQueueDrain(long now, Socket socket)
    {
        int queued = IsSending && KernelSendQueue.Bytes(socket) is { } bytes ? bytes : -1;
        if (queued >= 0 && _sendQueueAtSweep > queued)
        {
            _bytesDrained += _sendQueueAtSweep - queued;
            Volatile.Write(ref _lastActivity, Math.Max(now, Volatile.Read(ref _lastActivity)));
        }

        _sendQueueAtSweep = queued;
    }

    /// <summary>Sweep only: whether the connection moves less than <paramref name="minDataRate"/> bytes a second (see
    /// <see cref="DataRateWindow.IsSlow"/>).</summary>
    public bool IsSlow(long now, long windowMs, int minDataRate, long judgedAfterMs)
        => _rateWindow.IsSlow(now, Volatile.Read(ref _bytesMoved) + _bytesDrained, windowMs, minDataRate, judgedAfterMs);
}
