using System.Diagnostics;
using System.Net;
using System.Net.Sockets;

namespace PoolBench.Echo.Load;

/// <summary>
/// One TCP connection or UDP sender of the echo load. A client keeps up to <see cref="Pipeline"/>
/// messages in flight, checks every echo byte for byte, and allocates nothing per message: its
/// buffers are made up front and it uses the <see cref="Socket"/> methods that return a
/// <see cref="ValueTask"/>, which reuse one operation object per socket. To prove that, it counts
/// the bytes it allocates itself on the thread it runs on between two awaits, while measuring.
/// Counters are touched only by the client's own chain of awaits and read after it has finished.
/// </summary>
internal abstract class EchoClient(EchoRun run, MessagePattern pattern, int pipeline) : IDisposable
{
    private readonly long[] _sentAt = new long[pipeline];

    public LatencyHistogram Latency { get; } = new();

    /// <summary>Echoes received and checked while measuring.</summary>
    public long Messages { get; private set; }

    /// <summary>Mismatched echoes and broken connections, over the whole cell.</summary>
    public long Errors { get; private set; }

    /// <summary>UDP datagrams whose echo did not arrive in time (a lost datagram is not an error).</summary>
    public long Lost { get; protected set; }

    /// <summary>Bytes this client allocated on its own threads while measuring.</summary>
    public long AllocatedBytes { get; private set; }

    /// <summary>What went wrong first, for the log.</summary>
    public string? FirstError { get; private set; }

    protected EchoRun Run => run;

    protected MessagePattern Pattern => pattern;

    protected int Pipeline => pipeline;

    protected abstract Socket Socket { get; }

    public abstract Task ConnectAsync(EndPoint server);

    /// <summary>Runs the exchange until the drain phase has collected every echo in flight.</summary>
    public async Task RunAsync()
    {
        try
        {
            await ExchangeAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            Error($"{e.GetType().Name}: {e.Message}");
        }
    }

    public void Dispose() => Socket.Dispose();

    protected abstract Task ExchangeAsync();

    /// <summary>Fills the message for <paramref name="seq"/> at <paramref name="destination"/> and stamps its send time.</summary>
    protected void Prepare(Span<byte> destination, long seq)
    {
        pattern.Fill(destination, seq);
        _sentAt[seq % pipeline] = Stopwatch.GetTimestamp();
    }

    /// <summary>Counts the echo of <paramref name="seq"/> and its round-trip time, when measuring.</summary>
    protected void Completed(long seq)
    {
        if (run.Measuring)
        {
            Messages++;
            Latency.Record((long)Stopwatch.GetElapsedTime(_sentAt[seq % pipeline]).TotalNanoseconds);
        }
    }

    protected TimeSpan SinceSent(int slot) => Stopwatch.GetElapsedTime(_sentAt[slot]);

    /// <summary>Adds what this thread allocated since <paramref name="mark"/> to the client's count, when measuring.</summary>
    protected void Account(long mark)
    {
        if (run.Measuring)
        {
            AllocatedBytes += GC.GetAllocatedBytesForCurrentThread() - mark;
        }
    }

    protected void Error(string what)
    {
        Errors++;
        FirstError ??= what;
    }
}
