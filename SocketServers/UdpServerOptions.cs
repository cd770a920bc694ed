using System.Diagnostics.CodeAnalysis;
using System.Net;

namespace SocketServers;

/// <summary>Settings of a <see cref="UdpServer"/>; the defaults are safe for a public default install.</summary>
/// <remarks>Memory is bounded by (<see cref="MaxPendingDatagrams"/> + receives) × (<see cref="MaxDatagramSize"/> + 1)
/// bytes of pooled buffers, and by receives × (<see cref="MaxDatagramSize"/> + 1) while no datagram waits (with
/// <see cref="UdpProcessing.ReceiveThreads"/>, while the handler defers no reply), where receives is <see cref="ConcurrentReceives"/> or, by default, the number
/// of processors (at most <see cref="MaxAutomaticConcurrentReceives"/>). Every setter checks its value.
/// Not thread-safe.</remarks>
[SuppressMessage("ApiDesign", "RS0022", Justification = "SocketServerOptions has no protected members for a subclass to reach.")]
public class UdpServerOptions : SocketServerOptions
{
    /// <summary>The largest accepted <see cref="MaxDatagramSize"/>: 65535 bytes.</summary>
    public const int MaxDatagramSizeLimit = ushort.MaxValue;

    /// <summary>The largest accepted <see cref="ConcurrentReceives"/>: 256.</summary>
    public const int MaxConcurrentReceives = 256;

    /// <summary>The most receives <see cref="ConcurrentReceives"/> = 0 (the default) gives: 16.</summary>
    public const int MaxAutomaticConcurrentReceives = 16;

    /// <summary>The largest accepted <see cref="ReceiveBufferSize"/>: 1 GiB.</summary>
    public const int MaxReceiveBufferSize = 1 << 30;

    /// <summary>The lowest unprivileged port, 1024: ports below it are reserved for system services.</summary>
    public const int FirstUnprivilegedPort = 1024;

    private int _maxDatagramSize = 8192;
    private int _concurrentReceives;
    private int _maxPendingDatagrams = 256;
    private UdpProcessing _processing = UdpProcessing.ReceiveThreads;
    private int _firstAnsweredPort = FirstUnprivilegedPort;
    private int _maxRepliesPerEndpointPerSecond;
    private int _receiveBufferSize;

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

    /// <summary>How many receives are outstanding at once, 1 to <see cref="MaxConcurrentReceives"/>, or 0, the
    /// default: one per processor this process may run on (<see cref="Environment.ProcessorCount"/>) but one, and with
    /// <see cref="UdpProcessing.ReplyBlock"/> one per two processors; at least 1, at most
    /// <see cref="MaxAutomaticConcurrentReceives"/>. With <see cref="UdpProcessing.ReceiveThreads"/>, the number of
    /// receive threads. With <see cref="UdpProcessing.ReplyBlock"/>, one receive per socket: one, unless
    /// <see cref="SocketServerOptions.ReusePort"/> gives each of these receives a socket (.NET's socket engine completes a
    /// socket's receives one at a time, and allocates for each pending beyond the first).</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    /// <remarks>
    /// <para>
    /// The receives wait on one socket, and the kernel hands each datagram to one of them, so a port in use is an error
    /// and no later socket can join the port, whatever the number. With <see cref="SocketServerOptions.ReusePort"/> on
    /// Linux each receive has a socket of its own, all bound to the one address and port, and the kernel sends each
    /// sender's datagrams to one of them (SO_REUSEPORT, chosen by a hash of the sender's address and port): the receives
    /// share no queue and no lock, a sender's echoes come back in the order it sent, and a single sender is served by
    /// one receive at a time; but any later socket of the same user that asks for reuse-port joins them, as it is meant
    /// to for a second server process.
    /// </para>
    /// <para>
    /// Why one processor fewer: a receive that finds no datagram waiting sleeps, and each datagram then costs a
    /// wake-up, so receives the load does not keep busy take processor time from whatever else runs on the
    /// machine, such as the clients; a server with its cores to itself loses one receive in as many as it has. With
    /// <see cref="UdpProcessing.ReplyBlock"/> each datagram keeps two threads busy (the socket layer's, which receives
    /// it, and its reply block's), hence half as many.
    /// </para>
    /// <para>
    /// Why no more than 16 by default: the receives beyond keep threads waiting that the load seldom needs, and with
    /// reuse-port each socket has its own kernel receive buffer, so the datagrams the kernel holds for the server grow
    /// with the receives; set a larger number where the cores are there to answer them.
    /// </para>
    /// </remarks>
    public int ConcurrentReceives
    {
        get => _concurrentReceives;
        set => _concurrentReceives = CheckRange(value, 0, MaxConcurrentReceives);
    }

    /// <summary>How many received datagrams may wait for their reply, 1 to 65536; 256 by default: queued for the
    /// reply block (<see cref="UdpProcessing.ReplyBlock"/>), or deferred by the handler
    /// (<see cref="UdpDatagram.DeferReply"/>). Each receive under way may add one more, as its datagram's reply may
    /// wait too: when that many wait, and one more for each receive, receiving pauses and the kernel drops what does
    /// not fit in the socket buffer.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxPendingDatagrams
    {
        get => _maxPendingDatagrams;
        set => _maxPendingDatagrams = CheckRange(value, 1, 65536);
    }

    /// <summary>Whether datagrams from source ports below <see cref="FirstUnprivilegedPort"/> are echoed;
    /// <see langword="false"/> by default, which drops them (counted in <see cref="SocketServerCounters.Drops"/>, and
    /// logged as a warning a few times a second at most).</summary>
    /// <remarks>
    /// Services such as echo, chargen, DNS, NTP and TFTP answer from ports below 1024. A datagram that an attacker
    /// sends to this server with such a service's address as its source can make this server and that service
    /// answer each other without end (CVE-2024-2169). Clients send from ephemeral ports, far above 1024, so
    /// dropping these costs them nothing; allow them only for a client known to send from a low port.
    /// </remarks>
    public bool AllowPrivilegedSourcePorts { get; set; }

    /// <summary>The most datagrams from one sender (address and port) handed to the handler a second, counted in
    /// one-second windows, whether the handler then replies or not; 0, the default, hands over every datagram. A
    /// datagram over the limit is dropped before the handler sees it (counted in <see cref="SocketServerCounters.Drops"/>,
    /// and logged as a warning a few times a second at most), so a sender gets at most this many replies a second.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is negative.</exception>
    /// <remarks>
    /// <para>
    /// This ends echo loops with other echo servers (CVE-2024-2169): a datagram whose forged sender is another echo
    /// service makes the two answer each other, as fast as the network carries it, until one of them drops it. Over
    /// the limit, this server does. Set it for a server that strangers can reach, a little above what the busiest
    /// legitimate sender needs. Loops with another instance of this server on the same port never start (see
    /// <see cref="UdpServer"/>), so this is for echo services on other ports.
    /// </para>
    /// <para>
    /// The counts live in a table of fixed size (32 KiB) whatever the number of senders, and checking one allocates
    /// nothing. Senders can share a count, so under a flood from many senders a sender may get fewer replies than the
    /// limit, never more.
    /// </para>
    /// </remarks>
    public int MaxRepliesPerEndpointPerSecond
    {
        get => _maxRepliesPerEndpointPerSecond;
        set => _maxRepliesPerEndpointPerSecond = CheckRange(value, 0, int.MaxValue);
    }

    /// <summary>The kernel receive buffer each of the server's sockets asks for (SO_RCVBUF), in bytes, 1 to
    /// <see cref="MaxReceiveBufferSize"/>; 0, the default, keeps the system's. Datagrams that arrive while every receive
    /// is busy wait there, and the kernel drops those that do not fit, so a larger buffer absorbs longer bursts.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    /// <remarks>The kernel may grant less (Linux caps it at net.core.rmem_max, unless the process may raise it) and
    /// counts its own bookkeeping in it (Linux doubles the value); the server's start line logs what it got.</remarks>
    public int ReceiveBufferSize
    {
        get => _receiveBufferSize;
        set => _receiveBufferSize = CheckRange(value, 0, MaxReceiveBufferSize);
    }

    /// <summary>The receives a server with these options makes: <see cref="ConcurrentReceives"/>, or for 0 one per
    /// processor but one (one per two with <see cref="UdpProcessing.ReplyBlock"/>), at least one and at most
    /// <see cref="MaxAutomaticConcurrentReceives"/>.</summary>
    internal int EffectiveConcurrentReceives => _concurrentReceives != 0
        ? _concurrentReceives
        : Math.Clamp(
            _processing == UdpProcessing.ReplyBlock ? Environment.ProcessorCount / 2 : Environment.ProcessorCount - 1,
            1,
            MaxAutomaticConcurrentReceives);

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
