using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>
/// Counts, meters and logs how each datagram of a UDP server ended: answered (or, by the handler's choice, not),
/// dropped for a reason, or its reply failed or threw. Warnings a flood could repeat pass a few a second each.
/// </summary>
/// <remarks>Thread-safe: called from every receive loop, reply block and deferred reply at once.</remarks>
internal sealed class UdpDatagramOutcomes
{
    /// <summary>The reason a socketservers.dropped_datagrams measurement carries for a reply that failed.</summary>
    public const string DroppedReplyFailed = "reply_failed";

    /// <summary>The reason for a datagram received but not answered because the server stopped.</summary>
    public const string DroppedStopping = "stopping";

    private readonly SocketServer _server;
    private readonly LiveCounters _count;
    private readonly ILogger _logger;

    // What a trace line says the server did with a datagram it answered: "echoed" or "replied with".
    private readonly string _replied;

    // Lines about replies that failed or threw: a few a second each.
    private readonly LogRateLimiter _replyWarnings = new();
    private readonly LogRateLimiter _replyFaults = new();

    /// <summary>Creates the accounting of <paramref name="server"/>'s datagrams.</summary>
    /// <param name="server">The server, for the meter's tags and the lines' endpoint.</param>
    /// <param name="count">Its counters.</param>
    /// <param name="logger">Its logger.</param>
    /// <param name="isEcho">Whether it echoes, which its trace lines say.</param>
    public UdpDatagramOutcomes(SocketServer server, LiveCounters count, ILogger logger, bool isEcho)
    {
        _server = server;
        _count = count;
        _logger = logger;
        _replied = isEcho ? "echoed" : "replied with";
    }

    /// <summary>An immutable copy of the args' sender for a log event (which may be formatted later), since
    /// the args' own endpoint changes with its next receive.</summary>
    public static IPEndPoint? SenderOf(PooledSocketArgs args) => args.RemoteEndPoint switch
    {
        ReusableIPEndPoint reusable => reusable.Snapshot(),
        var other => other as IPEndPoint,
    };

    /// <summary>Counts a datagram that is not answered: in <see cref="SocketServerCounters.Drops"/>, and in the
    /// meter's socketservers.dropped_datagrams with <paramref name="reason"/>.</summary>
    public void Dropped(string reason)
    {
        _count.Dropped();
        SocketServerMetrics.DatagramDropped(_server, reason);
    }

    /// <summary>Counts and logs a finished reply: sent (or none, for <see cref="UdpDatagramHandler.NoReply"/>), or
    /// failed with <paramref name="exception"/>.</summary>
    public void Replied(PooledSocketArgs args, int length, Exception? exception)
    {
        if (exception is not null)
        {
            ReplyFailed(args, exception);
            return;
        }

        bool replied = length != UdpDatagramHandler.NoReply;
        _count.DatagramHandled(replied ? length : 0);
        if (_logger.IsEnabled(LogLevel.Trace))
        {
            if (replied)
            {
                _logger.DatagramHandled(_replied, length, SenderOf(args));
            }
            else
            {
                _logger.DatagramNotAnswered(SenderOf(args));
            }
        }
    }

    /// <summary>Counts and logs an exception out of a reply, or out of a handler after it deferred its reply; a logger
    /// that fails here too is ignored, so that the receives and replies go on.</summary>
    /// <param name="exception">What was thrown.</param>
    /// <param name="byHandler">Whether the handler threw it, which is its own failure (a warning, as when it throws
    /// without deferring), not the server's (an error).</param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    public void ReplyFaulted(Exception exception, bool byHandler = false)
    {
        SocketServerMetrics.Error(_server, byHandler ? "handler" : "reply", SocketServerMetrics.ErrorType(exception));
        try
        {
            if (_logger.IsEnabled(byHandler ? LogLevel.Warning : LogLevel.Error) && _replyFaults.TryAcquire(out long suppressed))
            {
                string note = LogRateLimiter.SuppressedNote(suppressed);
                if (byHandler)
                {
                    _logger.HandlerThrewAfterDeferring(exception, _server.LocalEndPoint, note);
                }
                else
                {
                    _logger.ReplyFaulted(exception, _server.LocalEndPoint, note);
                }
            }
        }
        catch (Exception)
        {
            // The logger failed as well: the metric has counted the fault.
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void ReplyFailed(PooledSocketArgs args, Exception exception)
    {
        Dropped(DroppedReplyFailed);
        switch (exception)
        {
            case SocketException socketException:
                if (_logger.IsEnabled(LogLevel.Debug))
                {
                    _logger.ReplySocketFailed(SenderOf(args), socketException.SocketErrorCode);
                }
                break;
            case ObjectDisposedException:
                // The socket was closed at the end of the stop grace period.
                break;
            default:
                if (_logger.IsEnabled(LogLevel.Warning) && _replyWarnings.TryAcquire(out long suppressed))
                {
                    _logger.ReplyFailed(exception, SenderOf(args), LogRateLimiter.SuppressedNote(suppressed));
                }
                break;
        }
    }
}
