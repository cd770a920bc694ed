using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;

namespace PoolBench.Echo.Soak;

/// <summary>
/// One client of the soak: until it is stopped, it does what clients of a real echo server do, one thing after
/// another in a fixed mix, each on a connection or socket of its own: echo sessions (connect, a few messages of
/// random sizes, close), resets in mid-message, half-closes (send a block, shut down sending, read the whole echo
/// to the end of the stream), idle connections (connect, wait, one echo) and UDP bursts (up to 64 datagrams at
/// once, then their echoes). Every echo is checked byte for byte. A step that takes longer than
/// <see cref="StepTimeout"/> is an error, so a client never hangs. Counters are touched by the client's own chain
/// of awaits only and read after it has finished.
/// </summary>
internal sealed class ChurnClient
{
    public static readonly TimeSpan StepTimeout = TimeSpan.FromSeconds(10);

    /// <summary>How long a UDP burst waits for the next echo before it counts the missing ones as lost.</summary>
    public static readonly TimeSpan UdpReplyTimeout = TimeSpan.FromMilliseconds(250);

    private const int MaxBlock = 64 * 1024;
    private const int MaxDatagram = 512;
    private const int MaxBurst = 64;

    // Three echo sessions, two bursts, two resets, two half-closes and one idle connection in every ten steps.
    private static readonly Step[] s_mix =
        [Step.Echo, Step.UdpBurst, Step.Reset, Step.Echo, Step.HalfClose, Step.UdpBurst, Step.Echo, Step.Idle, Step.Reset, Step.HalfClose];

    private readonly EndPoint _tcp;
    private readonly EndPoint _udp;
    private readonly Random _random;
    private readonly int _first;
    private readonly byte[] _send = new byte[MaxBlock];
    private readonly byte[] _receive = new byte[MaxBlock + 1];
    private readonly byte[] _datagrams = new byte[MaxBurst * MaxDatagram];
    private readonly int[] _datagramSizes = new int[MaxBurst];
    private readonly bool[] _answered = new bool[MaxBurst];

    public ChurnClient(EndPoint tcp, EndPoint udp, int seed)
    {
        _tcp = tcp;
        _udp = udp;
        _random = new Random(seed);
        // Clients start at different places in the mix, so that all kinds of step run at every moment.
        _first = seed % s_mix.Length;
    }

    /// <summary>TCP connections opened.</summary>
    public long Connections { get; private set; }

    /// <summary>TCP messages and blocks, and UDP datagrams, echoed and checked.</summary>
    public long Messages { get; private set; }

    /// <summary>Mismatched or missing echoes, failed connects, connections the server broke, steps that timed out.</summary>
    public long Errors { get; private set; }

    /// <summary>UDP datagrams whose echo did not come back (not an error: UDP may drop).</summary>
    public long Lost { get; private set; }

    /// <summary>What went wrong first, for the log.</summary>
    public string? FirstError { get; private set; }

    /// <summary>Runs steps until <paramref name="stop"/> is cancelled; the step under way then finishes (an idle wait ends early).</summary>
    public async Task RunAsync(CancellationToken stop)
    {
        for (int i = _first; !stop.IsCancellationRequested; i++)
        {
            Step step = s_mix[i % s_mix.Length];
            using var timeout = new CancellationTokenSource(StepTimeout);
            try
            {
                await (step switch
                {
                    Step.Echo => EchoAsync(timeout.Token),
                    Step.Reset => ResetAsync(timeout.Token),
                    Step.HalfClose => HalfCloseAsync(timeout.Token),
                    Step.Idle => IdleAsync(stop, timeout.Token),
                    _ => UdpBurstAsync(timeout.Token),
                }).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (timeout.IsCancellationRequested)
            {
                Error($"{step}: no answer within {StepTimeout.TotalSeconds} s");
            }
            catch (Exception e) when (e is SocketException or IOException or InvalidDataException)
            {
                Error($"{step}: {e.GetType().Name}: {e.Message}");
            }
        }
    }

    /// <summary>A few messages of random sizes, each echoed before the next, then a graceful close.</summary>
    private async Task EchoAsync(CancellationToken cancellationToken)
    {
        using Socket socket = await ConnectAsync(cancellationToken).ConfigureAwait(false);
        int count = _random.Next(1, 17);
        for (int m = 0; m < count; m++)
        {
            await EchoOnceAsync(socket, _random.Next(1, 2049), cancellationToken).ConfigureAwait(false);
        }

        socket.Shutdown(SocketShutdown.Send);
        if (await socket.ReceiveAsync(_receive, SocketFlags.None, cancellationToken).ConfigureAwait(false) != 0)
        {
            throw new InvalidDataException("the server sent more than the echoes");
        }
    }

    /// <summary>Sends part of a block, reads whatever comes back at once, and resets the connection.</summary>
    private async Task ResetAsync(CancellationToken cancellationToken)
    {
        using Socket socket = await ConnectAsync(cancellationToken).ConfigureAwait(false);
        int size = _random.Next(1, 16 * 1024 + 1);
        _random.NextBytes(_send.AsSpan(0, size));
        await SendAllAsync(socket, _send.AsMemory(0, size), cancellationToken).ConfigureAwait(false);
        if (_random.Next(2) == 0)
        {
            await socket.ReceiveAsync(_receive, SocketFlags.None, cancellationToken).ConfigureAwait(false);
        }

        // Linger 0: close sends a reset, with echoes still on their way.
        socket.LingerState = new LingerOption(true, 0);
    }

    /// <summary>Sends a block, shuts down sending, and reads the echo to the end of the stream.</summary>
    private async Task HalfCloseAsync(CancellationToken cancellationToken)
    {
        using Socket socket = await ConnectAsync(cancellationToken).ConfigureAwait(false);
        int size = _random.Next(1, MaxBlock + 1);
        _random.NextBytes(_send.AsSpan(0, size));
        await SendAllAsync(socket, _send.AsMemory(0, size), cancellationToken).ConfigureAwait(false);
        socket.Shutdown(SocketShutdown.Send);
        int filled = 0;
        while (await socket.ReceiveAsync(_receive.AsMemory(filled), SocketFlags.None, cancellationToken).ConfigureAwait(false) is int received and > 0)
        {
            filled += received;
            if (filled > size)
            {
                throw new InvalidDataException($"the server echoed more than the {size} bytes sent");
            }
        }

        Check(size, filled);
        Messages++;
    }

    /// <summary>Connects, stays quiet for up to 2 s, then echoes once; stopping ends the wait early.</summary>
    private async Task IdleAsync(CancellationToken stop, CancellationToken cancellationToken)
    {
        using Socket socket = await ConnectAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            await Task.Delay(_random.Next(200, 2001), stop).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return;
        }

        await EchoOnceAsync(socket, 16, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Sends up to 64 numbered datagrams at once, then takes their echoes in any order until all are back or none
    /// comes for <see cref="UdpReplyTimeout"/>; the missing ones are lost.
    /// </summary>
    private async Task UdpBurstAsync(CancellationToken cancellationToken)
    {
        using var socket = new Socket(_udp.AddressFamily, SocketType.Dgram, ProtocolType.Udp);
        await socket.ConnectAsync(_udp, cancellationToken).ConfigureAwait(false);
        int count = _random.Next(8, MaxBurst + 1);
        for (int i = 0; i < count; i++)
        {
            int size = _random.Next(sizeof(int), MaxDatagram + 1);
            Span<byte> datagram = _datagrams.AsSpan(i * MaxDatagram, size);
            _random.NextBytes(datagram);
            BinaryPrimitives.WriteInt32LittleEndian(datagram, i);
            _datagramSizes[i] = size;
            _answered[i] = false;
            socket.Send(datagram, SocketFlags.None);
        }

        int answered = 0;
        while (answered < count)
        {
            using var wait = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            wait.CancelAfter(UdpReplyTimeout);
            int received;
            try
            {
                received = await socket.ReceiveAsync(_receive, SocketFlags.None, wait.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                break;
            }

            int index = received >= sizeof(int) ? BinaryPrimitives.ReadInt32LittleEndian(_receive) : -1;
            if (index < 0 || index >= count || _answered[index]
                || !_receive.AsSpan(0, received).SequenceEqual(_datagrams.AsSpan(index * MaxDatagram, _datagramSizes[index])))
            {
                throw new InvalidDataException($"a {received}-byte echo matches no datagram of the burst");
            }

            _answered[index] = true;
            answered++;
        }

        Messages += answered;
        Lost += count - answered;
    }

    private async Task<Socket> ConnectAsync(CancellationToken cancellationToken)
    {
        var socket = new Socket(_tcp.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        try
        {
            await socket.ConnectAsync(_tcp, cancellationToken).ConfigureAwait(false);
            Connections++;
            return socket;
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }

    private async Task EchoOnceAsync(Socket socket, int size, CancellationToken cancellationToken)
    {
        _random.NextBytes(_send.AsSpan(0, size));
        await SendAllAsync(socket, _send.AsMemory(0, size), cancellationToken).ConfigureAwait(false);
        int filled = 0;
        while (filled < size)
        {
            int received = await socket.ReceiveAsync(_receive.AsMemory(filled, size - filled), SocketFlags.None, cancellationToken).ConfigureAwait(false);
            if (received == 0)
            {
                throw new InvalidDataException($"the server closed the connection {size - filled} bytes short of an echo");
            }

            filled += received;
        }

        Check(size, filled);
        Messages++;
    }

    private static async Task SendAllAsync(Socket socket, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        while (!data.IsEmpty)
        {
            data = data[await socket.SendAsync(data, SocketFlags.None, cancellationToken).ConfigureAwait(false)..];
        }
    }

    private void Check(int sent, int received)
    {
        if (received != sent || !_receive.AsSpan(0, received).SequenceEqual(_send.AsSpan(0, sent)))
        {
            throw new InvalidDataException($"the echo of {sent} bytes does not match: {received} bytes came back");
        }
    }

    private void Error(string what)
    {
        Errors++;
        FirstError ??= what;
    }

    private enum Step
    {
        Echo,
        Reset,
        HalfClose,
        Idle,
        UdpBurst,
    }
}
