namespace SocketServers;

/// <summary>Settings of a <see cref="TcpEchoServer"/>: those of every <see cref="TcpServer"/>, with the same defaults.</summary>
/// <remarks>A type of its own, so that a container configures the echo server apart from other TCP servers.
/// Not thread-safe.</remarks>
public sealed class TcpEchoServerOptions : TcpServerOptions
{
}
