using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.Logging;
using SocketServers.Internal;

namespace SocketServers;

/// <summary>Which datagrams the server answers: those that fit, from senders it may answer, within the reply limit;
/// the rest are counted, metered with their reason and warned about.</summary>
public partial class UdpServer
{
    // The reason an socketservers.dropped_datagrams measurement carries, one for each way a datagram goes unanswered.
    private const string DroppedTooLarge = "too_large";
    private const string DroppedFromPrivilegedPort = "privileged_port";
    private const string DroppedFromEchoServerPort = "echo_server_port";
    private const string DroppedOverRateLimit = "rate_limited";
    private const string DroppedStopping = "stopping";

    // One limiter per kind of line, so that a flood of one kind leaves the others their lines.
    private readonly LogRateLimiter _oversizedWarnings = new();
    private readonly LogRateLimiter _privilegedPortWarnings = new();
    private readonly LogRateLimiter _echoServerPortWarnings = new();
    private readonly LogRateLimiter _rateLimitWarnings = new();

    /// <summary>Which datagrams the server drops for where they come from, for the start's log line.</summary>
    private string DroppedSourcesText() => string.Create(
        CultureInfo.InvariantCulture,
        $"{(_firstAnsweredPort == 0 ? "every source port answered but" : $"source ports below {_firstAnsweredPort},")} {_ownPort} and {SocketServerOptions.DefaultPort} dropped{(_replyLimiter is null ? string.Empty : $", at most {_maxRepliesPerEndpoint} replies a second per sender")}");

    /// <returns>Whether the datagram in <paramref name="args"/> may be answered; if not, it is counted as a drop and
    /// logged.</returns>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool MayAnswer(PooledSocketArgs args)
    {
        if (args.RemoteEndPoint is not IPEndPoint sender)
        {
            return true;
        }

        int port = sender.Port;
        return (port >= _firstAnsweredPort && port != _ownPort && port != SocketServerOptions.DefaultPort && _replyLimiter is null)
            || MayAnswerFiltered(args, sender);
    }

    /// <summary><see cref="MayAnswer"/> for a datagram some filter applies to: one from a port it drops, or any
    /// datagram when replies are limited.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool MayAnswerFiltered(PooledSocketArgs args, IPEndPoint sender)
    {
        int port = sender.Port;
        if (port < _firstAnsweredPort)
        {
            Drop(args, DroppedFromPrivilegedPort, _privilegedPortWarnings, SocketServerLog.DatagramFromPrivilegedPort, _firstAnsweredPort);
            return false;
        }

        if (port == _ownPort || port == SocketServerOptions.DefaultPort)
        {
            Drop(args, DroppedFromEchoServerPort, _echoServerPortWarnings, SocketServerLog.DatagramFromEchoServerPort, port);
            return false;
        }

        if (_replyLimiter is { } limiter && !limiter.TryAcquire(sender))
        {
            Drop(args, DroppedOverRateLimit, _rateLimitWarnings, SocketServerLog.DatagramOverReplyLimit, _maxRepliesPerEndpoint);
            return false;
        }

        return true;
    }

    /// <returns>Whether the receive loop (or thread) goes on (see <see cref="UdpReceiveErrors"/>).</returns>
    /// <exception cref="SocketException">An unexpected error, while the server runs.</exception>
    private bool OnReceiveFailed(PooledSocketArgs args, SocketError error)
    {
        bool goesOn = UdpReceiveErrors.GoesOn(error, StoppingToken.IsCancellationRequested);
        if (UdpReceiveErrors.IsTooLarge(error))
        {
            Drop(args, DroppedTooLarge, _oversizedWarnings, SocketServerLog.DatagramTooLarge, _maxDatagramSize);
        }
        else if (UdpReceiveErrors.ReportsEarlierReply(error) && Logger.IsEnabled(LogLevel.Debug))
        {
            // The endpoint (read under the server's lock) is not read unless the line is logged.
            Logger.ReceiveReportedEarlierReply(LocalEndPoint, error);
        }

        return goesOn;
    }

    /// <summary>Counts a datagram that is not answered and warns about it, as often as
    /// <paramref name="warnings"/> lets through.</summary>
    /// <param name="args">The datagram's args; its sender goes into the warning.</param>
    /// <param name="reason">Why, for the meter.</param>
    /// <param name="warnings">The limiter of this kind of warning.</param>
    /// <param name="warning">The warning's <see cref="SocketServerLog"/> method: the sender, <paramref name="limit"/> and the suppressed note.</param>
    /// <param name="limit">The setting the datagram broke.</param>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Drop(PooledSocketArgs args, string reason, LogRateLimiter warnings, Action<ILogger, IPEndPoint?, int, string> warning, int limit)
    {
        _outcomes.Dropped(reason);
        if (Logger.IsEnabled(LogLevel.Warning) && warnings.TryAcquire(out long suppressed))
        {
            warning(Logger, UdpDatagramOutcomes.SenderOf(args), limit, LogRateLimiter.SuppressedNote(suppressed));
        }
    }

    /// <summary>What a receive loop does with a receive's outcome.</summary>
    private enum ReceiveOutcome
    {
        /// <summary>Answer the datagram.</summary>
        Answer,

        /// <summary>Go on to the next receive: the datagram was dropped, or the receive reported an earlier reply's error.</summary>
        Next,

        /// <summary>End the loop: the socket is closed.</summary>
        Stop,
    }

    /// <summary>Decides what a receive loop does after a receive that ended with <paramref name="error"/>.</summary>
    /// <param name="args">The receive's args.</param>
    /// <param name="error">The receive's outcome.</param>
    /// <param name="fits">Whether the datagram fit in <see cref="UdpServerOptions.MaxDatagramSize"/>.</param>
    /// <returns>Whether to answer, go on, or stop.</returns>
    /// <exception cref="SocketException">An unexpected error, while the server runs.</exception>
    private ReceiveOutcome Judge(PooledSocketArgs args, SocketError error, bool fits)
    {
        if (error == SocketError.Success && fits)
        {
            return MayAnswer(args) ? ReceiveOutcome.Answer : ReceiveOutcome.Next;
        }

        return OnReceiveFailed(args, error) ? ReceiveOutcome.Next : ReceiveOutcome.Stop;
    }
}
