using System.Net;

namespace SocketServers;

/// <summary>Settings of a <see cref="UdpEchoServer"/>; the defaults are safe for a public default install.</summary>
/// <remarks>Memory is bounded by <see cref="ConcurrentReceives"/> × (<see cref="MaxDatagramSize"/> + 1) bytes of
/// pooled buffers, and with <see cref="UdpProcessing.ReplyBlock"/> by (<see cref="MaxPendingDatagrams"/> +
/// <see cref="ConcurrentReceives"/>) × (<see cref="MaxDatagramSize"/> + 1). Every setter checks its value.
/// Not thread-safe.</remarks>
public sealed class UdpEchoServerOptions : EchoServerOptions
{
    /// <summary>The largest accepted <see cref="MaxDatagramSize"/>: 65535 bytes.</summary>
    public const int MaxDatagramSizeLimit = ushort.MaxValue;

    /// <summary>The largest accepted <see cref="ConcurrentReceives"/>: 256.</summary>
    public const int MaxConcurrentReceives = 256;

    /// <summary>The lowest unprivileged port, 1024: ports below it are reserved for system services.</summary>
    public const int FirstUnprivilegedPort = 1024;

    private int _maxDatagramSize = 8192;
    private int _concurrentReceives = 1;
    private int _maxPendingDatagrams = 256;
    private UdpProcessing _processing = UdpProcessing.ReceiveThreads;
    private int _firstAnsweredPort = FirstUnprivilegedPort;

    /// <summary>How datagrams are received and replied to; <see cref="UdpProcessing.ReceiveThreads"/> by
    /// default.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is not a defined <see cref="UdpProcessing"/>.</exception>
    public UdpProcessing Processing
    {
        get => _processing;
        set => _processing = Enum.IsDefined(value) ? value : throw new ArgumentOutOfRangeException(nameof(Processing), value, "Not a defined UdpProcessing value.");
    }

    /// <summary>The largest datagram echoed, in bytes, 1 to <see cref="MaxDatagramSizeLimit"/>; 8192 by
    /// default. A larger datagram is dropped (counted and logged as a warning), never echoed truncated.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxDatagramSize
    {
        get => _maxDatagramSize;
        set => _maxDatagramSize = CheckRange(value, 1, MaxDatagramSizeLimit);
    }

    /// <summary>How many receives are outstanding at once, 1 to 256; 1 by default. With
    /// <see cref="UdpProcessing.ReceiveThreads"/>, the number of receive threads.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    /// <remarks>
    /// Why one: on a small machine one receive keeps up best. With <see cref="UdpProcessing.ReceiveThreads"/>, a
    /// second thread only adds switches between the two; with <see cref="UdpProcessing.ReplyBlock"/>, the socket
    /// layer on Linux runs one socket's receives one after the other, and a receive started while another is
    /// pending is queued and completed by a thread-pool work item, so with several outstanding no receive ever
    /// completes on the spot.
    /// </remarks>
    public int ConcurrentReceives
    {
        get => _concurrentReceives;
        set => _concurrentReceives = CheckRange(value, 1, MaxConcurrentReceives);
    }

    /// <summary>With <see cref="UdpProcessing.ReplyBlock"/>, how many received datagrams may wait for their
    /// reply, 1 to 65536; 256 by default. When that many wait, receiving pauses and the kernel drops what does
    /// not fit in the socket buffer. Not used by <see cref="UdpProcessing.ReceiveThreads"/>, where each thread
    /// replies before it receives again.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxPendingDatagrams
    {
        get => _maxPendingDatagrams;
        set => _maxPendingDatagrams = CheckRange(value, 1, 65536);
    }

    /// <summary>Whether datagrams from source ports below <see cref="FirstUnprivilegedPort"/> are echoed;
    /// <see langword="false"/> by default, which drops them (counted in <see cref="EchoServerCounters.Drops"/>, and
    /// logged as a warning a few times a second at most).</summary>
    /// <remarks>
    /// Services such as echo, chargen, DNS, NTP and TFTP answer from ports below 1024. A datagram that an attacker
    /// sends to this server with such a service's address as its source can make this server and that service
    /// answer each other without end (CVE-2024-2169). Clients send from ephemeral ports, far above 1024, so
    /// dropping these costs them nothing; allow them only for a client known to send from a low port.
    /// </remarks>
    public bool AllowPrivilegedSourcePorts { get; set; }

    /// <summary>Source ports below this are dropped unless <see cref="AllowPrivilegedSourcePorts"/> is set;
    /// <see cref="FirstUnprivilegedPort"/>, and settable only so that a test can drop datagrams from a port it can
    /// bind without privileges.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is outside 1 to 65536.</exception>
    internal int FirstAnsweredPort
    {
        get => _firstAnsweredPort;
        set => _firstAnsweredPort = CheckRange(value, 1, IPEndPoint.MaxPort + 1);
    }
}
