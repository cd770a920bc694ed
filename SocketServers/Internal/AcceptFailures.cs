using System.Net.Sockets;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>
/// What a TCP accept loop does after an accept that failed: a client that left before its accept is skipped at once;
/// any other failure is metered, warned about a few times a second, and followed by a pause, since the listener stays
/// readable while a client waits and an accept retried at once would fail at once (out of file descriptors, say).
/// </summary>
/// <remarks>Thread-safe; one per server, called by its accept loop.</remarks>
internal sealed class AcceptFailures
{
    /// <summary>The pause after an accept that failed.</summary>
    public static readonly TimeSpan Backoff = TimeSpan.FromMilliseconds(100);

    private readonly SocketServer _server;
    private readonly ILogger _logger;
    private readonly TimeProvider _time;

    // Warnings that a flood of failing accepts could repeat without end: a few lines a second.
    private readonly LogRateLimiter _warnings;

    /// <summary>Creates the handling of <paramref name="server"/>'s failed accepts.</summary>
    /// <param name="server">The server whose accepts fail, for the meter's tags and the warning's endpoint.</param>
    /// <param name="logger">Where the warnings go.</param>
    /// <param name="time">What the pause and the warnings' rate run on; <see langword="null"/> for the system's.</param>
    public AcceptFailures(SocketServer server, ILogger logger, TimeProvider? time = null)
    {
        _server = server;
        _logger = logger;
        _time = time ?? TimeProvider.System;
        _warnings = new LogRateLimiter(LogRateLimiter.DefaultLinesPerSecond, TimeSpan.FromSeconds(1), new MillisecondClock(_time));
    }

    /// <summary>Handles an accept that ended with <paramref name="error"/>.</summary>
    /// <param name="error">The accept's outcome, not <see cref="SocketError.Success"/>.</param>
    /// <param name="stopping">The server's stopping token, which ends the pause.</param>
    /// <returns>Whether to accept again: not once the server stops.</returns>
    public async ValueTask<bool> OnFailedAsync(SocketError error, CancellationToken stopping)
    {
        if (stopping.IsCancellationRequested || error == SocketError.OperationAborted)
        {
            return false;
        }

        if (error is SocketError.ConnectionAborted or SocketError.ConnectionReset)
        {
            _logger.AcceptClientLeft(_server.LocalEndPoint, error);
            return true;
        }

        SocketServerMetrics.Error(_server, "accept", error.ToString());
        if (_logger.IsEnabled(LogLevel.Warning) && _warnings.TryAcquire(out long suppressed))
        {
            _logger.AcceptFailed(_server.LocalEndPoint, error, LogRateLimiter.SuppressedNote(suppressed));
        }

        await Task.Delay(Backoff, _time, stopping).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
        return !stopping.IsCancellationRequested;
    }
}
