namespace SocketServers;

/// <summary>Settings of a <see cref="UdpEchoServer"/>: those of every <see cref="UdpServer"/>, with the same defaults.</summary>
/// <remarks>A type of its own, so that a container configures the echo server apart from other UDP servers.
/// Not thread-safe.</remarks>
public sealed class UdpEchoServerOptions : UdpServerOptions
{
}
