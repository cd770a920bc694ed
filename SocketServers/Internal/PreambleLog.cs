using System.Net;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>The log lines of what runs before a TCP connection starts: the PROXY header, the TLS handshake, the certificate files.</summary>
internal static partial class PreambleLog
{
    [LoggerMessage(101, LogLevel.Debug, "TCP client {RemoteEndPoint} closed before it was served: {Stage} {Reason}")]
    public static partial void PreambleFailed(this ILogger logger, EndPoint? remoteEndPoint, string stage, string reason, Exception? exception);

    [LoggerMessage(102, LogLevel.Information, "TLS certificate reloaded: {Subject} ({Thumbprint})")]
    public static partial void CertificateReloaded(this ILogger logger, string subject, string thumbprint);

    [LoggerMessage(104, LogLevel.Warning, "TLS certificate files in {Folder} cannot be watched, so changes to them will not be reloaded: {Reason}")]
    public static partial void CertificateNotWatched(this ILogger logger, string folder, string reason);

    [LoggerMessage(103, LogLevel.Warning, "TLS certificate not reloaded, the one in use stays: {Reason}")]
    public static partial void CertificateReloadFailed(this ILogger logger, string reason);
}
