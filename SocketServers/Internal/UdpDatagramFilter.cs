using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>
/// Which datagrams a UDP server answers, and what its receive loops do after each receive: a datagram that fits, from a
/// sender it may answer, within the reply limit, is answered; the rest are counted, metered with their reason and warned
/// about, and a receive error goes as <see cref="UdpReceiveErrors"/> says.
/// </summary>
/// <remarks>Thread-safe: every receive loop judges through it at once. <see cref="Bound"/> is called once, before any
/// receive starts.</remarks>
internal sealed class UdpDatagramFilter
{
    // The reason a socketservers.dropped_datagrams measurement carries, one for each way a datagram goes unanswered here.
    private const string DroppedTooLarge = "too_large";
    private const string DroppedFromPrivilegedPort = "privileged_port";
    private const string DroppedFromEchoServerPort = "echo_server_port";
    private const string DroppedOverRateLimit = "rate_limited";

    private readonly SocketServer _server;
    private readonly ILogger _logger;
    private readonly UdpDatagramOutcomes _outcomes;
    private readonly CancellationToken _stopping;
    private readonly int _maxDatagramSize;
    private readonly int _maxRepliesPerEndpoint;

    // Datagrams from source ports below this are dropped; 0 when every port is answered.
    private readonly int _firstAnsweredPort;

    // Counts replies per sender; null when there is no limit.
    private readonly EndpointRateLimiter? _replyLimiter;

    // One limiter per kind of line, so that a flood of one kind leaves the others their lines.
    private readonly LogRateLimiter _oversizedWarnings = new();
    private readonly LogRateLimiter _privilegedPortWarnings = new();
    private readonly LogRateLimiter _echoServerPortWarnings = new();
    private readonly LogRateLimiter _rateLimitWarnings = new();

    // The port the server is bound to; datagrams from it are dropped. Set by Bound before any receive starts.
    private int _ownPort;

    /// <summary>Creates the filter of a server with <paramref name="options"/>.</summary>
    /// <param name="options">The server's settings.</param>
    /// <param name="clock">The reply limit's clock.</param>
    /// <param name="server">The server, whose endpoint the lines about receive errors name.</param>
    /// <param name="logger">Where the warnings go.</param>
    /// <param name="outcomes">What counts the dropped datagrams.</param>
    /// <param name="stopping">The server's stopping token.</param>
    public UdpDatagramFilter(UdpServerOptions options, MillisecondClock clock, SocketServer server, ILogger logger, UdpDatagramOutcomes outcomes, CancellationToken stopping)
    {
        _server = server;
        _logger = logger;
        _outcomes = outcomes;
        _stopping = stopping;
        _maxDatagramSize = options.MaxDatagramSize;
        _firstAnsweredPort = options.AllowPrivilegedSourcePorts ? 0 : options.FirstAnsweredPort;
        _maxRepliesPerEndpoint = options.MaxRepliesPerEndpointPerSecond;
        _replyLimiter = _maxRepliesPerEndpoint > 0 ? new EndpointRateLimiter(_maxRepliesPerEndpoint, clock) : null;
    }

    /// <summary>What a receive loop does with a receive's outcome.</summary>
    public enum Outcome
    {
        /// <summary>Answer the datagram.</summary>
        Answer,

        /// <summary>Go on to the next receive: the datagram was dropped, or the receive reported an earlier reply's error.</summary>
        Next,

        /// <summary>End the loop: the socket is closed.</summary>
        Stop,
    }

    /// <summary>Takes the port the server is bound to, whose datagrams are dropped; before any receive starts.</summary>
    public void Bound(int ownPort) => _ownPort = ownPort;

    /// <summary>Which datagrams the server drops for where they come from, for the start's log line.</summary>
    public string DroppedSourcesText() => string.Create(
        CultureInfo.InvariantCulture,
        $"{(_firstAnsweredPort == 0 ? "every source port answered but" : $"source ports below {_firstAnsweredPort},")} {_ownPort} and {SocketServerOptions.DefaultPort} dropped{(_replyLimiter is null ? string.Empty : $", at most {_maxRepliesPerEndpoint} replies a second per sender")}");

    /// <summary>Decides what a receive loop does after a receive that ended with <paramref name="error"/>.</summary>
    /// <param name="args">The receive's args.</param>
    /// <param name="error">The receive's outcome.</param>
    /// <param name="length">The datagram's length; more than the largest accepted size for one that did not fit.</param>
    /// <returns>Whether to answer, go on, or stop.</returns>
    /// <exception cref="SocketException">An unexpected error, while the server runs.</exception>
    public Outcome Judge(PooledSocketArgs args, SocketError error, int length)
    {
        if (error == SocketError.Success && length <= _maxDatagramSize)
        {
            return MayAnswer(args) ? Outcome.Answer : Outcome.Next;
        }

        return OnReceiveFailed(args, error) ? Outcome.Next : Outcome.Stop;
    }

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
        bool goesOn = UdpReceiveErrors.GoesOn(error, _stopping.IsCancellationRequested);
        if (UdpReceiveErrors.IsTooLarge(error))
        {
            Drop(args, DroppedTooLarge, _oversizedWarnings, SocketServerLog.DatagramTooLarge, _maxDatagramSize);
        }
        else if (UdpReceiveErrors.ReportsEarlierReply(error) && _logger.IsEnabled(LogLevel.Debug))
        {
            // The endpoint (read under the server's lock) is not read unless the line is logged.
            _logger.ReceiveReportedEarlierReply(_server.LocalEndPoint, error);
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
        if (_logger.IsEnabled(LogLevel.Warning) && warnings.TryAcquire(out long suppressed))
        {
            warning(_logger, UdpDatagramOutcomes.SenderOf(args), limit, LogRateLimiter.SuppressedNote(suppressed));
        }
    }
}
