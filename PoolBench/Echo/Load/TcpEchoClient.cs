using System.Net;
using System.Net.Sockets;

namespace PoolBench.Echo.Load;

/// <summary>
/// A TCP connection that sends numbered messages and reads the byte stream back. The stream keeps
/// order, so the next echo must be the oldest message in flight; a receive can end anywhere inside
/// a message, and the partial rest is kept for the next receive. After each receive it sends as many
/// new messages as it has completed, so exactly <see cref="EchoClient.Pipeline"/> stay in flight.
/// </summary>
internal sealed class TcpEchoClient : EchoClient
{
    private readonly Socket _socket;
    private readonly byte[] _send;
    private readonly byte[] _receive;
    private long _nextSend;
    private long _nextReceive;

    public TcpEchoClient(EchoRun run, MessagePattern pattern, int pipeline, AddressFamily family)
        : base(run, pattern, pipeline)
    {
        _socket = new Socket(family, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        _send = new byte[pattern.Size * pipeline];
        _receive = new byte[pattern.Size * pipeline];
    }

    protected override Socket Socket => _socket;

    public override Task ConnectAsync(EndPoint server) => _socket.ConnectAsync(server);

    protected override async Task ExchangeAsync()
    {
        int size = Pattern.Size;
        int filled = 0;
        int toSend = Pipeline;
        long mark = GC.GetAllocatedBytesForCurrentThread();
        while (true)
        {
            for (int i = 0; i < toSend; i++)
            {
                Prepare(_send.AsSpan(i * size, size), _nextSend++);
            }

            for (int offset = 0; offset < toSend * size;)
            {
                ValueTask<int> sending = _socket.SendAsync(_send.AsMemory(offset, toSend * size - offset), SocketFlags.None);
                Account(mark);
                offset += await sending.ConfigureAwait(false);
                mark = GC.GetAllocatedBytesForCurrentThread();
            }

            if (_nextReceive == _nextSend)
            {
                _socket.Shutdown(SocketShutdown.Send);
                Account(mark);
                return;
            }

            ValueTask<int> receiving = _socket.ReceiveAsync(_receive.AsMemory(filled), SocketFlags.None);
            Account(mark);
            int received = await receiving.ConfigureAwait(false);
            mark = GC.GetAllocatedBytesForCurrentThread();
            if (received == 0)
            {
                Error($"the server closed the connection with {_nextSend - _nextReceive} message(s) in flight");
                return;
            }

            filled += received;
            int complete = filled / size;
            for (int m = 0; m < complete; m++)
            {
                if (!Pattern.Matches(_receive.AsSpan(m * size, size), _nextReceive))
                {
                    Error($"echo of message {_nextReceive} does not match what was sent");
                    return;
                }

                Completed(_nextReceive++);
            }

            filled -= complete * size;
            _receive.AsSpan(complete * size, filled).CopyTo(_receive);
            toSend = Run.Draining ? 0 : complete;
        }
    }
}
