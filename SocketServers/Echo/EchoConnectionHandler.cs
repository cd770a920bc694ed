using System.Runtime.CompilerServices;

namespace SocketServers.Echo;

/// <summary>RFC 862 over TCP: every byte received is written back, in order; nothing is left unconsumed.</summary>
internal sealed class EchoConnectionHandler : TcpConnectionHandler
{
    /// <summary>Gets the one instance; the handler keeps no state.</summary>
    public static EchoConnectionHandler Instance { get; } = new();

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
    {
        await connection.WriteAsync(data).ConfigureAwait(false);
        return data.Length;
    }
}
