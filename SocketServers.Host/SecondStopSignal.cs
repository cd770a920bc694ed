using System.Runtime.InteropServices;

namespace SocketServers.Host;

/// <summary>
/// Ctrl+C (SIGINT) or SIGTERM a second time while the host stops: the first starts the graceful stop (the Generic
/// Host's console lifetime handles it), and the next ends the servers' grace period, so that they close what is left at
/// once instead of waiting for it. The same signal again within half a second of the last one is the same signal received
/// twice, not another.
/// </summary>
/// <remarks>
/// A signal sent to a process group reaches the host twice under <c>dotnet run</c>: directly, and forwarded by the
/// <c>dotnet run</c> process a moment later; <c>timeout</c>, supervisors and a terminal's Ctrl+C send it so. The handler
/// is not told who sent a signal (<see cref="PosixSignalRegistration"/> passes no siginfo), so the two deliveries are told
/// apart from a deliberate second signal by time. Half a second leaves the forward ample room on a busy machine (it takes
/// milliseconds), and is less than a person takes to see the stop begin and press Ctrl+C again; one who pressed twice
/// at once presses a third time.
/// </remarks>
internal sealed class SecondStopSignal : IDisposable
{
    // The same signal within this span of the last one is one delivery to the process group, received twice.
    private static readonly TimeSpan s_sameDelivery = TimeSpan.FromMilliseconds(500);

    private readonly IReadOnlyList<SocketServer> _servers;
    private readonly TextWriter _output;
    private readonly TimeProvider _time;
    private readonly PosixSignalRegistration _interrupt;
    private readonly PosixSignalRegistration _terminate;
    private readonly Lock _gate = new();

    // Guarded by _gate: the last stop signal delivered (a copy received twice is not another) and its timestamp.
    private PosixSignal? _last;
    private long _lastAt;

    /// <summary>Starts listening for the signals.</summary>
    /// <param name="servers">The servers whose grace period a second signal ends.</param>
    /// <param name="output">Where the host says so.</param>
    /// <param name="time">The clock that tells a signal received twice from a second one.</param>
    public SecondStopSignal(IReadOnlyList<SocketServer> servers, TextWriter output, TimeProvider time)
    {
        _servers = servers;
        _output = output;
        _time = time;
        _interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
        _terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
    }

    public void Dispose()
    {
        _interrupt.Dispose();
        _terminate.Dispose();
    }

    /// <summary>Handles a stop signal: the first is the Generic Host's, a later one ends the grace period.</summary>
    /// <param name="context">The signal; cancelled, so that the process goes on, for every signal after the first.</param>
    internal void OnSignal(PosixSignalContext context)
    {
        long now = _time.GetTimestamp();
        lock (_gate)
        {
            PosixSignal? last = _last;
            if (last == context.Signal && _time.GetElapsedTime(_lastAt, now) < s_sameDelivery)
            {
                // The copy of the last delivery: the stop goes on as that one left it, and so does the process.
                context.Cancel = true;
                return;
            }

            _last = context.Signal;
            _lastAt = now;
            if (last is null)
            {
                return;
            }

            // Not the end of the process: the stop goes on, and the host exits when it is done.
            context.Cancel = true;
        }

        _output.WriteLine("Stopping now: closing what is still in flight.");
        var ended = new CancellationToken(canceled: true);
        foreach (SocketServer server in _servers)
        {
            _ = server.StopAsync(ended);
        }
    }
}
