using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Net.Sockets;
using System.Security.Authentication;
using PoolLib.Internal;

namespace SocketServers.Internal;

/// <summary>The servers' one <see cref="Meter"/>, named <c>SocketServers</c>, and its instruments, named for any protocol
/// in the style of Kestrel's (<c>socketservers.active_connections</c>). Every measurement carries
/// <c>network.transport</c> (<c>tcp</c> or <c>udp</c>), <c>server.address</c> and <c>server.port</c>.</summary>
/// <remarks>
/// Counts are observable: they read each running server's counters when a listener collects, so the per-message path
/// records nothing it did not already count. The connection-duration histogram is recorded once per connection and
/// dropped datagrams once per drop, both off the per-message path. The instruments are published when the first server
/// starts, and, if a listener threw from <see cref="MeterListener.InstrumentPublished"/>, again when the next one does
/// (<see cref="MeterInstruments{TInstruments}"/>): a failing listener costs measurements until then, never a server.
/// </remarks>
internal static class SocketServerMetrics
{
    public const string MeterName = "SocketServers";

    // The servers observed, from their start (Track) until they stop (Untrack); held weakly, so that one never
    // stopped can still be collected.
    private static readonly WeakRegistry<SocketServer> s_servers = new();

    private static readonly MeterInstruments<Instruments> s_instruments = new(MeterName, static meter => new Instruments(meter));

    /// <summary>Observes <paramref name="server"/> until <see cref="Untrack"/> or until it is collected, publishing the
    /// instruments unless they are.</summary>
    public static void Track(SocketServer server)
    {
        s_servers.Add(server);
        s_instruments.EnsurePublished();
    }

    /// <summary>Stops observing <paramref name="server"/>.</summary>
    public static void Untrack(SocketServer server) => s_servers.Remove(server);

    public static void ConnectionClosed(SocketServer server, TimeSpan duration)
    {
        if (s_instruments.Current?.ConnectionDuration is { Enabled: true } connectionDuration)
        {
            TagList tags = Tags(server);
            connectionDuration.Record(duration.TotalSeconds, tags);
        }
    }

    public static void DatagramDropped(SocketServer server, string reason)
    {
        if (s_instruments.Current?.DatagramsDropped is { Enabled: true } datagramsDropped)
        {
            TagList tags = Tags(server);
            tags.Add("reason", reason);
            datagramsDropped.Add(1, tags);
        }
    }

    /// <summary>Counts a TCP message that could not be received whole, which closed its connection.</summary>
    /// <param name="server">The server it happened in.</param>
    /// <param name="reason"><c>max_message_size</c> (longer than <see cref="TcpServerOptions.MaxMessageSize"/>) or
    /// <c>memory_budget</c> (the budget of the buffers for long messages was spent).</param>
    public static void MessageTooLarge(SocketServer server, string reason)
    {
        if (s_instruments.Current?.OversizedMessages is { Enabled: true } oversizedMessages)
        {
            TagList tags = Tags(server);
            tags.Add("reason", reason);
            oversizedMessages.Add(1, tags);
        }
    }

    /// <summary>Counts a failure the server went on after: a failed accept or receive, or an operation that threw.</summary>
    /// <param name="server">The server it happened in.</param>
    /// <param name="operation">What failed: <c>accept</c>, <c>receive</c>, <c>handler</c>, <c>reply</c> or <c>sweep</c>.</param>
    /// <param name="errorType">The socket error's name, or the exception's full type name.</param>
    public static void Error(SocketServer server, string operation, string errorType)
    {
        if (s_instruments.Current?.Errors is { Enabled: true } errors)
        {
            TagList tags = Tags(server);
            tags.Add("socketservers.operation", operation);
            tags.Add("error.type", errorType);
            errors.Add(1, tags);
        }
    }

    /// <summary>Records a TLS handshake's duration, with the protocol version it agreed on or why it failed.</summary>
    /// <param name="server">The server it happened in.</param>
    /// <param name="duration">How long it took.</param>
    /// <param name="protocol">The version agreed on; <see langword="null"/> if it failed.</param>
    /// <param name="failure">Why it failed (<c>timeout</c>, <c>protocol</c>, <c>client_closed</c>, <c>error</c>); <see langword="null"/> if it did not.</param>
    public static void TlsHandshake(SocketServer server, TimeSpan duration, SslProtocols? protocol, string? failure)
    {
        if (s_instruments.Current?.TlsHandshakeDuration is { Enabled: true } handshakeDuration)
        {
            TagList tags = Tags(server);
            if (protocol is { } version)
            {
                tags.Add("tls.protocol.version", ProtocolVersion(version));
            }
            else
            {
                tags.Add("error.type", failure);
            }

            handshakeDuration.Record(duration.TotalSeconds, tags);
        }
    }

    /// <summary>Counts a connection closed before it started.</summary>
    /// <param name="server">The server it happened in.</param>
    /// <param name="stage">Where: <c>proxy</c> (its PROXY header) or <c>tls</c> (its handshake).</param>
    /// <param name="reason"><c>timeout</c>, <c>malformed</c>, <c>protocol</c>, <c>client_closed</c> or <c>error</c>.</param>
    public static void HandshakeFailed(SocketServer server, string stage, string reason)
    {
        if (s_instruments.Current?.HandshakeFailures is { Enabled: true } failures)
        {
            TagList tags = Tags(server);
            tags.Add("socketservers.handshake.stage", stage);
            tags.Add("reason", reason);
            failures.Add(1, tags);
        }
    }

    // As OpenTelemetry's tls.protocol.version spells it.
    private static string ProtocolVersion(SslProtocols protocol) => protocol switch
    {
        SslProtocols.Tls13 => "1.3",
        SslProtocols.Tls12 => "1.2",
#pragma warning disable SYSLIB0039 // Named to report them, not to enable them.
        SslProtocols.Tls11 => "1.1",
        SslProtocols.Tls => "1.0",
#pragma warning restore SYSLIB0039
        _ => protocol.ToString(),
    };

    /// <returns>The <c>error.type</c> of <paramref name="exception"/>: a socket error's name, else the exception's full type name.</returns>
    public static string ErrorType(Exception exception)
        => exception is SocketException socketException ? socketException.SocketErrorCode.ToString() : exception.GetType().FullName ?? exception.GetType().Name;

    private static IEnumerable<Measurement<long>> Observe(ProtocolType? protocol, Func<SocketServer, SocketServerCounters, long> read)
    {
        foreach (SocketServer server in s_servers.Live())
        {
            if (protocol is null || server.Protocol == protocol)
            {
                yield return new Measurement<long>(read(server, server.Counters), Tags(server));
            }
        }
    }

    private static TagList Tags(SocketServer server)
    {
        var tags = new TagList { { "network.transport", server.Protocol == ProtocolType.Tcp ? "tcp" : "udp" } };
        if (server.LocalEndPoint is { } endPoint)
        {
            tags.Add("server.address", endPoint.Address.ToString());
            tags.Add("server.port", endPoint.Port);
        }

        return tags;
    }

    /// <summary>The instruments, made in one publication on the meter they are given.</summary>
    private sealed class Instruments
    {
        public Instruments(Meter meter)
        {
            ConnectionDuration = meter.CreateHistogram<double>("socketservers.connection.duration", "s", "How long TCP connections lasted.");
            DatagramsDropped = meter.CreateCounter<long>("socketservers.dropped_datagrams", "{datagram}", "UDP datagrams not answered, by reason.");
            TlsHandshakeDuration = meter.CreateHistogram<double>("socketservers.tls.handshake.duration", "s", "How long TLS handshakes took, by protocol version or error.");
            HandshakeFailures = meter.CreateCounter<long>("socketservers.handshake_failures", "{connection}", "TCP connections closed before they started: a PROXY header or TLS handshake failed, by stage and reason.");
            OversizedMessages = meter.CreateCounter<long>("socketservers.oversized_messages", "{message}", "TCP messages too large to receive whole, which closed their connection, by reason.");
            Errors = meter.CreateCounter<long>("socketservers.errors", "{error}", "Unexpected failures the server went on after, by operation and error type.");
            meter.CreateObservableUpDownCounter("socketservers.active_connections", () => Observe(ProtocolType.Tcp, static (s, c) => c.CurrentConnections), "{connection}", "TCP connections open now.");
            meter.CreateObservableUpDownCounter("socketservers.queued_connections", () => Observe(ProtocolType.Tcp, static (s, c) => s.QueuedConnections), "{connection}", "TCP clients waiting in the listen backlog (Linux).");
            meter.CreateObservableCounter("socketservers.rejected_connections", () => Observe(ProtocolType.Tcp, static (s, c) => c.Rejected), "{connection}", "TCP clients closed at once: over a connection limit.");
            meter.CreateObservableCounter("socketservers.evicted_connections", () => Observe(ProtocolType.Tcp, static (s, c) => c.Evicted), "{connection}", "TCP connections evicted for a waiting client.");
            meter.CreateObservableCounter("socketservers.sent_bytes", () => Observe(null, static (s, c) => c.BytesSent), "By", "Bytes sent.");
            meter.CreateObservableCounter("socketservers.messages", () => Observe(null, static (s, c) => c.MessagesHandled), "{message}", "TCP receives handled and UDP datagrams answered.");
        }

        public Histogram<double> ConnectionDuration { get; }

        public Counter<long> DatagramsDropped { get; }

        public Counter<long> Errors { get; }

        public Histogram<double> TlsHandshakeDuration { get; }

        public Counter<long> HandshakeFailures { get; }

        public Counter<long> OversizedMessages { get; }
    }
}
