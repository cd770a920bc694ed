using System.Runtime.InteropServices;

namespace SocketServers.Host;

/// <summary>
/// Ctrl+C (SIGINT) or SIGTERM a second time while the host stops: the first starts the graceful stop (the Generic
/// Host's console lifetime handles it), and the next ends the servers' grace period, so that they close what is left at
/// once instead of waiting for it.
/// </summary>
internal sealed class SecondStopSignal : IDisposable
{
    private readonly IReadOnlyList<SocketServer> _servers;
    private readonly TextWriter _output;
    private readonly PosixSignalRegistration _interrupt;
    private readonly PosixSignalRegistration _terminate;

    // Stop signals received so far.
    private int _signals;

    /// <summary>Starts listening for the signals.</summary>
    /// <param name="servers">The servers whose grace period a second signal ends.</param>
    /// <param name="output">Where the host says so.</param>
    public SecondStopSignal(IReadOnlyList<SocketServer> servers, TextWriter output)
    {
        _servers = servers;
        _output = output;
        _interrupt = PosixSignalRegistration.Create(PosixSignal.SIGINT, OnSignal);
        _terminate = PosixSignalRegistration.Create(PosixSignal.SIGTERM, OnSignal);
    }

    public void Dispose()
    {
        _interrupt.Dispose();
        _terminate.Dispose();
    }

    private void OnSignal(PosixSignalContext context)
    {
        if (Interlocked.Increment(ref _signals) < 2)
        {
            return;
        }

        // Not the end of the process: the stop goes on, without its grace period, and the host exits when it is done.
        context.Cancel = true;
        _output.WriteLine("Stopping now: closing what is still in flight.");
        var ended = new CancellationToken(canceled: true);
        foreach (SocketServer server in _servers)
        {
            _ = server.StopAsync(ended);
        }
    }
}
