using System.Net.Sockets;

namespace SocketServers.Internal;

/// <summary>
/// Faults a test makes a server meet, each run at the one place where that fault would happen; given to a server's
/// internal constructor. <see cref="None"/>, the servers' own, injects nothing.
/// </summary>
internal sealed class FaultInjection
{
    /// <summary>Injects nothing.</summary>
    public static readonly FaultInjection None = new();

    /// <summary>Gets a fault that runs before each TCP accept; a result other than <see cref="SocketError.Success"/>
    /// stands for the accept's own, which is then not made.</summary>
    public Func<SocketError>? BeforeAccept { get; init; }

    /// <summary>Gets what runs on each accepted socket before its connection is set up; what it throws is a set-up
    /// that failed.</summary>
    public Action<Socket>? BeforeConnectionSetup { get; init; }

    /// <summary>Gets what runs at the start of each sweep over the TCP connections; what it throws is a sweep that
    /// failed.</summary>
    public Action? BeforeSweep { get; init; }

    /// <summary>Gets a fault that runs on the receiving thread before each UDP receive, with the receive's args taken;
    /// a result other than <see cref="SocketError.Success"/> stands for the receive's own, which is then not made,
    /// and what it throws is an unexpected exception of the receive loop.</summary>
    public Func<SocketError>? BeforeReceive { get; init; }
}
