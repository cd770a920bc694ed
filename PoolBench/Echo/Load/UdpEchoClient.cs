using System.Net;
using System.Net.Sockets;

namespace PoolBench.Echo.Load;

/// <summary>
/// A UDP sender with <see cref="EchoClient.Pipeline"/> slots, each with one datagram in flight.
/// Message numbers are <c>round * pipeline + slot</c>, so a reply names its slot. Datagrams may be
/// lost or come back out of order: a reply must match its number's content byte for byte and carry
/// the number its slot waits for (a reply to an older number, one already given up as lost, is
/// ignored). A slot whose reply takes longer than <see cref="ReplyTimeout"/> counts one lost
/// datagram and sends the next. Sends are synchronous (a datagram send never waits for the peer);
/// the receive timeout reuses one <see cref="CancellationTokenSource"/> until it fires, so the
/// steady state allocates nothing.
/// </summary>
internal sealed class UdpEchoClient : EchoClient
{
    public static readonly TimeSpan ReplyTimeout = TimeSpan.FromMilliseconds(250);

    private readonly Socket _socket;
    private readonly byte[] _send;
    private readonly byte[] _receive;
    private readonly long[] _waitingFor;

    // The receive timeout, reused until it fires; touched by the client's own chain of awaits only.
    private CancellationTokenSource _timeout = new();

    public UdpEchoClient(EchoRun run, MessagePattern pattern, int pipeline, AddressFamily family)
        : base(run, pattern, pipeline)
    {
        _socket = new Socket(family, SocketType.Dgram, ProtocolType.Udp);
        _send = new byte[pattern.Size * pipeline];
        _receive = new byte[pattern.Size + 1];
        _waitingFor = new long[pipeline];
    }

    protected override Socket Socket => _socket;

    public override Task ConnectAsync(EndPoint server) => _socket.ConnectAsync(server);

    protected override async Task ExchangeAsync()
    {
        int inFlight = Pipeline;
        for (int slot = 0; slot < Pipeline; slot++)
        {
            _waitingFor[slot] = slot;
            Send(slot);
        }

        long mark = GC.GetAllocatedBytesForCurrentThread();
        while (inFlight > 0)
        {
            _timeout.CancelAfter(ReplyTimeout);
            ValueTask<int> receiving = _socket.ReceiveAsync(_receive, SocketFlags.None, _timeout.Token);
            Account(mark);
            int received;
            try
            {
                received = await receiving.ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                mark = GC.GetAllocatedBytesForCurrentThread();
                RenewTimeout();
                inFlight -= GiveUpOverdue();
                continue;
            }

            mark = GC.GetAllocatedBytesForCurrentThread();
            if (!_timeout.TryReset())
            {
                RenewTimeout();
            }

            if (!TryAnswer(received, out bool retired))
            {
                return;
            }

            inFlight -= retired ? 1 : 0;
        }

        _timeout.Dispose();
    }

    /// <summary>
    /// Takes the reply of <paramref name="received"/> bytes: false for one that matches no datagram sent; an echo its
    /// slot waits for counts and sends the slot's next datagram, or retires the slot when draining.
    /// </summary>
    private bool TryAnswer(int received, out bool retired)
    {
        retired = false;
        long seq = received == Pattern.Size ? MessagePattern.SequenceOf(_receive) : -1;
        if (seq < 0 || !Pattern.Matches(_receive.AsSpan(0, received), seq) || seq > _waitingFor[seq % Pipeline])
        {
            Error($"a {received}-byte echo does not match any datagram sent");
            return false;
        }

        int answered = (int)(seq % Pipeline);
        if (seq < _waitingFor[answered])
        {
            // The reply to a datagram already given up as lost.
            return true;
        }

        Completed(seq);
        if (Run.Draining)
        {
            _waitingFor[answered] = long.MaxValue;
            retired = true;
        }
        else
        {
            _waitingFor[answered] += Pipeline;
            Send(answered);
        }

        return true;
    }

    /// <summary>A fired source cannot be reset: the next receive gets a new one.</summary>
    private void RenewTimeout()
    {
        _timeout.Dispose();
        _timeout = new CancellationTokenSource();
    }

    /// <summary>Counts every overdue slot as lost; sends its next datagram, or retires it when draining.</summary>
    private int GiveUpOverdue()
    {
        int retired = 0;
        for (int slot = 0; slot < Pipeline; slot++)
        {
            if (_waitingFor[slot] == long.MaxValue || SinceSent(slot) < ReplyTimeout)
            {
                continue;
            }

            Lost++;
            if (Run.Draining)
            {
                _waitingFor[slot] = long.MaxValue;
                retired++;
            }
            else
            {
                _waitingFor[slot] += Pipeline;
                Send(slot);
            }
        }

        return retired;
    }

    private void Send(int slot)
    {
        Span<byte> datagram = _send.AsSpan(slot * Pattern.Size, Pattern.Size);
        Prepare(datagram, _waitingFor[slot]);
        _socket.Send(datagram, SocketFlags.None);
    }
}
