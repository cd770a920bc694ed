namespace SocketServers;

/// <summary>Settings of a <see cref="UdpEchoServer"/>; the defaults are safe for a public default install.</summary>
/// <remarks>Memory is bounded by (<see cref="MaxPendingDatagrams"/> + <see cref="ConcurrentReceives"/>) ×
/// (<see cref="MaxDatagramSize"/> + 1) bytes of pooled buffers. Every setter checks its value. Not thread-safe.</remarks>
public sealed class UdpEchoServerOptions : EchoServerOptions
{
    /// <summary>The largest accepted <see cref="MaxDatagramSize"/>: 65535 bytes.</summary>
    public const int MaxDatagramSizeLimit = ushort.MaxValue;

    private int _maxDatagramSize = 8192;
    private int _concurrentReceives = 1;
    private int _maxPendingDatagrams = 256;

    /// <summary>The largest datagram echoed, in bytes, 1 to <see cref="MaxDatagramSizeLimit"/>; 8192 by
    /// default. A larger datagram is dropped (counted and logged as a warning), never echoed truncated.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxDatagramSize
    {
        get => _maxDatagramSize;
        set => _maxDatagramSize = CheckRange(value, 1, MaxDatagramSizeLimit);
    }

    /// <summary>How many receives are outstanding at once, 1 to 256; 1 by default.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    /// <remarks>
    /// Why one: on Linux the socket layer runs one socket's receives one after the other. A receive started
    /// while none is pending is tried at once and completes on the spot when a datagram is waiting; one started
    /// while another is pending is queued, and every queued receive is completed by a thread-pool work item
    /// after the socket's readiness notification. So with several outstanding, no receive ever completes on
    /// the spot, and each datagram costs a thread hand-off before the one to the reply stage.
    /// </remarks>
    public int ConcurrentReceives
    {
        get => _concurrentReceives;
        set => _concurrentReceives = CheckRange(value, 1, 256);
    }

    /// <summary>How many received datagrams may wait for their reply, 1 to 65536; 256 by default. When
    /// that many wait, receiving pauses and the kernel drops what does not fit in the socket buffer.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxPendingDatagrams
    {
        get => _maxPendingDatagrams;
        set => _maxPendingDatagrams = CheckRange(value, 1, 65536);
    }
}
