namespace SocketServers.Internal;

/// <summary>
/// Who ends a connection's stream when the server closes it: the connection's loop, or the thread that asks for the
/// close (a stop, the handler's close from any thread). State only; the connection does the I/O each answer calls for.
/// </summary>
/// <remarks>Thread safety: the loop's methods (<see cref="EnterWaiting"/>, <see cref="LeaveWaiting"/>, the partial
/// wait's and <see cref="MarkEnded"/>) are called by the loop alone; the requests from any thread.</remarks>
internal sealed class CloseHandshake
{
    // None until the first of stop, idle sweep, eviction, the handler's close or abort sets it; Aborted overrides the
    // others, and an idle close overrides the handler's. Enum fields are read with Volatile through their int.
    private int _request;

    // The handshake's invariant: the stream is ended once, by whoever moves _phase from Waiting to Ended. Only the loop
    // moves Handling to Waiting and back; Waiting to Ended, by the loop or a requester, is final. The loop publishes
    // Waiting, then reads _request; a requester publishes _request, then tries Waiting to Ended; each with a full fence,
    // so at least one sees the other. A loop waiting with part of a message stays Handling and sets
    // _waitingWithPartial instead, and a request wakes it through _partialWait.
    private int _phase;

    // 1 while the loop waits for data holding part of a message (so in Handling).
    private int _waitingWithPartial;

    // Made by the loop before its first wait holding part of a message, published by setting _waitingWithPartial.
    // Not a shutdown of the receive side: after one, reads see an end of stream at once, so the loop could no longer
    // wait for the client's close, and closing before it would reset what the client still sends.
    private CancellationTokenSource? _partialWait;

    /// <summary>Gets why the server closes the connection; <see cref="CloseRequest.None"/> if it does not.</summary>
    public CloseRequest Request => (CloseRequest)Volatile.Read(ref _request);

    /// <summary>Gets whether the server has begun to close the connection.</summary>
    public bool IsClosing => Request != CloseRequest.None;

    /// <summary>Gets whether the server cut the connection off without waiting for the handler.</summary>
    public bool IsCutOff => Request is CloseRequest.IdleClose or CloseRequest.Evicted or CloseRequest.Aborted;

    /// <summary>Gets whether a graceful end is asked for: the loop reads nothing more and ends the stream.</summary>
    public bool IsEndRequested => Request is CloseRequest.Stop or CloseRequest.HandlerClose;

    /// <summary>Sets <paramref name="request"/> unless the server is closing the connection already.</summary>
    /// <returns>Whether it was set.</returns>
    public bool TryRequest(CloseRequest request)
        => Interlocked.CompareExchange(ref _request, (int)request, (int)CloseRequest.None) == (int)CloseRequest.None;

    /// <summary>The idle sweep's request, which also cuts a handler's close short.</summary>
    /// <returns>Whether it was set.</returns>
    public bool TryRequestIdleClose()
        => TryRequest(CloseRequest.IdleClose)
        || Interlocked.CompareExchange(ref _request, (int)CloseRequest.IdleClose, (int)CloseRequest.HandlerClose) == (int)CloseRequest.HandlerClose;

    /// <summary>The end of the stop's grace period, which overrides any other request.</summary>
    public void Abort() => Interlocked.Exchange(ref _request, (int)CloseRequest.Aborted);

    /// <summary>Asks for a graceful end (<see cref="CloseRequest.Stop"/> or <see cref="CloseRequest.HandlerClose"/>);
    /// wakes a loop that waits holding part of a message, which then ends the stream itself.</summary>
    /// <returns>Whether the caller ends the stream now: the loop waits for data and owes nothing.</returns>
    public bool RequestEnd(CloseRequest request)
    {
        if (!TryRequest(request))
        {
            return false;
        }

        if (Interlocked.CompareExchange(ref _phase, (int)ConnectionPhase.Ended, (int)ConnectionPhase.Waiting) == (int)ConnectionPhase.Waiting)
        {
            return true;
        }

        if (Volatile.Read(ref _waitingWithPartial) == 1)
        {
            Volatile.Read(ref _partialWait)!.Cancel();
        }

        return false;
    }

    /// <summary>The loop, about to wait owing nothing: publishes <see cref="ConnectionPhase.Waiting"/>, then looks for a
    /// graceful end's request.</summary>
    /// <param name="endStream">Whether the loop ends the stream now (the requester did not).</param>
    /// <returns>Whether to wait for data; <see langword="false"/> once the stream is ended.</returns>
    public bool EnterWaiting(out bool endStream)
    {
        Interlocked.Exchange(ref _phase, (int)ConnectionPhase.Waiting);
        endStream = false;
        if (!IsEndRequested)
        {
            return true;
        }

        endStream = Interlocked.CompareExchange(ref _phase, (int)ConnectionPhase.Ended, (int)ConnectionPhase.Waiting) == (int)ConnectionPhase.Waiting;
        return false;
    }

    /// <summary>The loop, after its wait owing nothing: back to handling, unless a request ended the stream meanwhile.</summary>
    /// <returns>Whether to handle what came; <see langword="false"/> when it is not owed.</returns>
    public bool LeaveWaiting()
        => Interlocked.CompareExchange(ref _phase, (int)ConnectionPhase.Handling, (int)ConnectionPhase.Waiting) == (int)ConnectionPhase.Waiting;

    /// <summary>The loop, about to wait holding part of a message: publishes that, then looks for a graceful end's request.</summary>
    /// <param name="requested">Cancelled by a request that comes during the wait.</param>
    /// <returns>Whether to wait; <see langword="false"/> when a request is there (the loop ends the stream).</returns>
    public bool BeginPartialWait(out CancellationToken requested)
    {
        CancellationTokenSource partialWait = _partialWait ??= new CancellationTokenSource();
        Interlocked.Exchange(ref _waitingWithPartial, 1);
        requested = partialWait.Token;
        if (IsEndRequested)
        {
            EndPartialWait();
            return false;
        }

        return true;
    }

    /// <summary>The loop, after a wait holding part of a message.</summary>
    public void EndPartialWait() => Volatile.Write(ref _waitingWithPartial, 0);

    /// <summary>The loop has ended the stream itself, holding part of a message.</summary>
    public void MarkEnded() => Interlocked.Exchange(ref _phase, (int)ConnectionPhase.Ended);
}
