using System.Net;
using System.Net.Sockets;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>Every line the servers log, as source-generated <see cref="ILogger"/> methods: each checks its
/// level first and allocates nothing when the level is off.</summary>
/// <remarks>Lines a flood could repeat without end end with a <c>Suppressed</c> note from
/// <see cref="LogRateLimiter.SuppressedNote"/>; their callers ask the limiter first.</remarks>
internal static partial class SocketServerLog
{
    [LoggerMessage(1, LogLevel.Information, "{Server} listening on {EndPoint} (max {MaxConnections} connections, buffer {BufferSize} B, idle timeout {IdleTimeout})")]
    public static partial void TcpListening(this ILogger logger, string server, IPEndPoint endPoint, int maxConnections, int bufferSize, string idleTimeout);

    [LoggerMessage(2, LogLevel.Information, "{Server} on {EndPoint} stopping: letting {Count} connections finish their replies")]
    public static partial void TcpStopping(this ILogger logger, string server, IPEndPoint? endPoint, int count);

    [LoggerMessage(3, LogLevel.Information, "{Server} on {EndPoint}: stop grace period over, closing {Count} connections")]
    public static partial void TcpGracePeriodOver(this ILogger logger, string server, IPEndPoint? endPoint, int count);

    [LoggerMessage(45, LogLevel.Warning, "{Server} on {EndPoint}: handler calls still running {Wait} after the stop grace period; stopping without them")]
    public static partial void StopLeftHandlerCalls(this ILogger logger, string server, IPEndPoint? endPoint, TimeSpan wait);

    [LoggerMessage(4, LogLevel.Information, "{Server} on {EndPoint} stopped: {Counters}")]
    public static partial void TcpStopped(this ILogger logger, string server, IPEndPoint? endPoint, SocketServerCounters counters);

    [LoggerMessage(5, LogLevel.Debug, "TCP accept on {EndPoint}: client left before accept ({SocketError})")]
    public static partial void AcceptClientLeft(this ILogger logger, IPEndPoint? endPoint, SocketError socketError);

    [LoggerMessage(6, LogLevel.Warning, "TCP accept on {EndPoint} failed: {SocketError}{Suppressed}")]
    public static partial void AcceptFailed(this ILogger logger, IPEndPoint? endPoint, SocketError socketError, string suppressed);

    [LoggerMessage(7, LogLevel.Error, "{Protocol} {Operation} loop on {EndPoint} failed; {Outcome}{Suppressed}")]
    public static partial void LoopFailed(this ILogger logger, Exception exception, string protocol, string operation, IPEndPoint? endPoint, string outcome, string suppressed);

    [LoggerMessage(9, LogLevel.Debug, "TCP client {RemoteEndPoint} rejected: {Reason}")]
    public static partial void ClientRejected(this ILogger logger, EndPoint? remoteEndPoint, string reason);

    [LoggerMessage(10, LogLevel.Debug, "TCP connection on {EndPoint} closed during set-up")]
    public static partial void ConnectionSetUpFailed(this ILogger logger, Exception exception, IPEndPoint? endPoint);

    [LoggerMessage(12, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} opened")]
    public static partial void ConnectionOpened(this ILogger logger, long connectionId, EndPoint? remoteEndPoint);

    [LoggerMessage(13, LogLevel.Warning, "TCP connection {ConnectionId} from {RemoteEndPoint} failed{Suppressed}")]
    public static partial void ConnectionFailed(this ILogger logger, Exception exception, long connectionId, EndPoint? remoteEndPoint, string suppressed);

    [LoggerMessage(14, LogLevel.Trace, "TCP connection {ConnectionId} handled {Bytes} bytes received")]
    public static partial void ConnectionReceiveHandled(this ILogger logger, long connectionId, int bytes);

    [LoggerMessage(15, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} closed")]
    public static partial void ConnectionClosed(this ILogger logger, long connectionId, EndPoint? remoteEndPoint);

    [LoggerMessage(16, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} closed after the idle timeout")]
    public static partial void ConnectionIdleClosed(this ILogger logger, long connectionId, EndPoint? remoteEndPoint);

    [LoggerMessage(17, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} evicted for a waiting client: below the minimum data rate")]
    public static partial void ConnectionEvicted(this ILogger logger, long connectionId, EndPoint? remoteEndPoint);

    [LoggerMessage(18, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} closed at the end of the stop grace period")]
    public static partial void ConnectionAborted(this ILogger logger, long connectionId, EndPoint? remoteEndPoint);

    [LoggerMessage(19, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} lost: {SocketError}")]
    public static partial void ConnectionLost(this ILogger logger, long connectionId, EndPoint? remoteEndPoint, SocketError socketError);

    [LoggerMessage(57, LogLevel.Debug, "TCP connection {ConnectionId} from {RemoteEndPoint} reset: closed by its handler, and not by the client within the linger")]
    public static partial void ConnectionLingerReset(this ILogger logger, long connectionId, EndPoint? remoteEndPoint);

    [LoggerMessage(20, LogLevel.Warning, "TCP connection {ConnectionId} from {RemoteEndPoint} failed: {SocketError}{Suppressed}")]
    public static partial void ConnectionSocketFailed(this ILogger logger, long connectionId, EndPoint? remoteEndPoint, SocketError socketError, string suppressed);

    [LoggerMessage(30, LogLevel.Information, "{Server} listening on {EndPoint} ({Processing}, max datagram {MaxDatagramSize} B, {Receives} receives on {Sockets} sockets, receive buffer {ReceiveBufferSize} B, {DroppedSources})")]
    public static partial void UdpListening(this ILogger logger, string server, IPEndPoint endPoint, UdpProcessing processing, int maxDatagramSize, int receives, int sockets, int receiveBufferSize, string droppedSources);

    [LoggerMessage(31, LogLevel.Information, "{Server} on {EndPoint}: stop grace period over, dropping the replies still waiting")]
    public static partial void UdpGracePeriodOver(this ILogger logger, string server, IPEndPoint? endPoint);

    [LoggerMessage(32, LogLevel.Information, "{Server} on {EndPoint} stopped: {Counters}")]
    public static partial void UdpStopped(this ILogger logger, string server, IPEndPoint? endPoint, SocketServerCounters counters);

    [LoggerMessage(34, LogLevel.Warning, "UDP datagram from {RemoteEndPoint} dropped: larger than {MaxDatagramSize} bytes{Suppressed}")]
    public static partial void DatagramTooLarge(this ILogger logger, IPEndPoint? remoteEndPoint, int maxDatagramSize, string suppressed);

    [LoggerMessage(35, LogLevel.Warning, "UDP datagram from {RemoteEndPoint} dropped: source ports below {FirstAnsweredPort} belong to services, and answering one may start an endless loop{Suppressed}")]
    public static partial void DatagramFromPrivilegedPort(this ILogger logger, IPEndPoint? remoteEndPoint, int firstAnsweredPort, string suppressed);

    [LoggerMessage(42, LogLevel.Warning, "UDP datagram from {RemoteEndPoint} dropped: port {Port} is this server's own or the default port, where servers like this one may listen, and answering one may start an endless loop{Suppressed}")]
    public static partial void DatagramFromEchoServerPort(this ILogger logger, IPEndPoint? remoteEndPoint, int port, string suppressed);

    [LoggerMessage(43, LogLevel.Warning, "UDP datagram from {RemoteEndPoint} dropped: over {MaxRepliesPerSecond} replies a second to one sender{Suppressed}")]
    public static partial void DatagramOverReplyLimit(this ILogger logger, IPEndPoint? remoteEndPoint, int maxRepliesPerSecond, string suppressed);

    [LoggerMessage(36, LogLevel.Debug, "UDP receive on {EndPoint}: {SocketError} from an earlier reply, receiving on")]
    public static partial void ReceiveReportedEarlierReply(this ILogger logger, IPEndPoint? endPoint, SocketError socketError);

    [LoggerMessage(38, LogLevel.Trace, "UDP {Replied} {Bytes} bytes to {RemoteEndPoint}")]
    public static partial void DatagramHandled(this ILogger logger, string replied, int bytes, IPEndPoint? remoteEndPoint);

    [LoggerMessage(44, LogLevel.Trace, "UDP sent no reply to {RemoteEndPoint}")]
    public static partial void DatagramNotAnswered(this ILogger logger, IPEndPoint? remoteEndPoint);

    [LoggerMessage(39, LogLevel.Debug, "UDP reply to {RemoteEndPoint} failed: {SocketError}")]
    public static partial void ReplySocketFailed(this ILogger logger, IPEndPoint? remoteEndPoint, SocketError socketError);

    [LoggerMessage(40, LogLevel.Warning, "UDP reply to {RemoteEndPoint} failed{Suppressed}")]
    public static partial void ReplyFailed(this ILogger logger, Exception exception, IPEndPoint? remoteEndPoint, string suppressed);

    [LoggerMessage(41, LogLevel.Error, "UDP reply on {EndPoint} failed unexpectedly; replies go on{Suppressed}")]
    public static partial void ReplyFaulted(this ILogger logger, Exception exception, IPEndPoint? endPoint, string suppressed);

    [LoggerMessage(46, LogLevel.Warning, "UDP handler on {EndPoint} threw after deferring its reply, which is still the handle's{Suppressed}")]
    public static partial void HandlerThrewAfterDeferring(this ILogger logger, Exception exception, IPEndPoint? endPoint, string suppressed);

    [LoggerMessage(47, LogLevel.Debug, "TCP client connection {ConnectionId} to {RemoteEndPoint} opened from {LocalEndPoint}")]
    public static partial void ClientConnectionOpened(this ILogger logger, long connectionId, EndPoint remoteEndPoint, EndPoint localEndPoint);

    [LoggerMessage(48, LogLevel.Warning, "TCP client connect to {EndPoint} failed{Suppressed}")]
    public static partial void ClientConnectFailed(this ILogger logger, Exception exception, string endPoint, string suppressed);

    [LoggerMessage(49, LogLevel.Debug, "TCP client connection {ConnectionId} to {RemoteEndPoint} closed")]
    public static partial void ClientConnectionClosed(this ILogger logger, long connectionId, EndPoint remoteEndPoint);

    [LoggerMessage(50, LogLevel.Warning, "TCP client connection {ConnectionId} to {RemoteEndPoint} failed{Suppressed}")]
    public static partial void ClientConnectionFailed(this ILogger logger, Exception exception, long connectionId, EndPoint remoteEndPoint, string suppressed);

    [LoggerMessage(51, LogLevel.Debug, "TCP client connection {ConnectionId} to {RemoteEndPoint}: an operation was cancelled in flight; closing it")]
    public static partial void ClientConnectionCanceled(this ILogger logger, long connectionId, EndPoint remoteEndPoint);

    [LoggerMessage(52, LogLevel.Debug, "TCP client connection {ConnectionId} to {RemoteEndPoint}: the server ended its stream")]
    public static partial void ClientConnectionEnded(this ILogger logger, long connectionId, EndPoint remoteEndPoint);

    [LoggerMessage(53, LogLevel.Debug, "TCP client connection {ConnectionId} to {RemoteEndPoint} was closed by the server while idle; discarding it")]
    public static partial void ClientConnectionEndedIdle(this ILogger logger, long connectionId, EndPoint remoteEndPoint);

    [LoggerMessage(54, LogLevel.Warning, "TCP client connection {ConnectionId} to {RemoteEndPoint} holds {Bytes} bytes no request read; discarding it{Suppressed}")]
    public static partial void ClientConnectionUnreadBytes(this ILogger logger, long connectionId, EndPoint remoteEndPoint, int bytes, string suppressed);

    [LoggerMessage(55, LogLevel.Debug, "TCP client connection {ConnectionId} to {RemoteEndPoint} failed its health check; discarding it")]
    public static partial void ClientHealthCheckFailed(this ILogger logger, long connectionId, EndPoint remoteEndPoint);

    [LoggerMessage(56, LogLevel.Warning, "TCP client connection {ConnectionId} to {RemoteEndPoint}: the health check threw; discarding it{Suppressed}")]
    public static partial void ClientHealthCheckThrew(this ILogger logger, Exception exception, long connectionId, EndPoint remoteEndPoint, string suppressed);
}
