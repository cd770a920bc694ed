using System.Diagnostics;
using System.Net;
using System.Reflection;
using System.Net.Sockets;

namespace SocketServers.Tests;

/// <summary>
/// What an in-process TCP server allocates per request in steady state: a blocking client on the test's thread sends
/// one batch of requests at a time and reads its replies whole, allocating nothing per batch and counting what it does
/// allocate; the process-wide growth less the client's is the server's, plus whatever the runtime and the test host do
/// meanwhile (the benchmark measures the exact figure out of process). Measured in rounds, since code not yet
/// recompiled boxes what optimized code does not (an int formatted into a reply, 24 B, until a second or so in).
/// </summary>
internal static class TcpAllocationMeter
{
    /// <summary>The category of these tests, which .ci/run also runs in Release.</summary>
    public const string Category = "Optimized";

    private const int BatchesPerRound = 2_000;

    // Enough for the runtime to recompile on one CPU too, where it waits ten times longer before it does (about 10 s).
    public const int MaxRounds = 300;

    /// <summary>Inconclusive unless the server and the tests' handlers are optimized builds: a Debug build compiles each
    /// async method's state machine as a class, one object per call (226 B a RESP request, 53 B a line measured).</summary>
    public static void AssumeOptimizedBuild() => Assume.That(
        IsOptimized(typeof(TcpServer).Assembly) && IsOptimized(typeof(TcpAllocationMeter).Assembly),
        "a Debug build allocates an async state machine per handler call; .ci/run runs this test in Release too");

    /// <returns>The bytes the process allocated per request, less the client's, in the first round under
    /// <paramref name="goal"/>, else the lowest of <see cref="MaxRounds"/>.</returns>
    /// <param name="server">The server's endpoint.</param>
    /// <param name="batch">The requests of one batch, sent in one write.</param>
    /// <param name="requestsPerBatch">How many requests <paramref name="batch"/> holds.</param>
    /// <param name="replyLinesPerBatch">How many line ends the replies to one batch hold: the client reads until it has them all.</param>
    /// <param name="goal">The figure the test asks for.</param>
    public static double ServerBytesPerRequest(IPEndPoint server, byte[] batch, int requestsPerBatch, int replyLinesPerBatch, double goal)
    {
        using var client = new Socket(server.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 10_000 };
        client.Connect(server);
        byte[] received = new byte[64 * 1024];
        double lowest = double.MaxValue;
        for (int round = 0; round < MaxRounds && lowest >= goal; round++)
        {
            long clientBefore = GC.GetAllocatedBytesForCurrentThread();
            long before = GC.GetTotalAllocatedBytes(precise: true);
            for (int i = 0; i < BatchesPerRound; i++)
            {
                client.Send(batch);
                for (int lines = 0; lines < replyLinesPerBatch;)
                {
                    int read = client.Receive(received);
                    if (read == 0)
                    {
                        throw new IOException("the server closed the connection");
                    }

                    lines += received.AsSpan(0, read).Count((byte)'\n');
                }
            }

            long after = GC.GetTotalAllocatedBytes(precise: true);
            long clientAllocated = GC.GetAllocatedBytesForCurrentThread() - clientBefore;
            lowest = Math.Min(lowest, (double)(after - before - clientAllocated) / (BatchesPerRound * requestsPerBatch));
        }

        return lowest;
    }

    private static bool IsOptimized(Assembly assembly) => assembly.GetCustomAttribute<DebuggableAttribute>()?.IsJITOptimizerDisabled != true;
}
