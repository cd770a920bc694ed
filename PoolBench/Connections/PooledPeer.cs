using System.Net;
using System.Net.Sockets;
using PoolLib;
using SocketServers;

namespace PoolBench.Connections;

/// <summary>The two pooled peers.</summary>
internal static class PooledPeer
{
    public const string OursName = "TcpClientPool";
    public const string HandWrittenName = "hand-written";

    public static IConnectionsPeer Ours(EndPoint server, int workers)
    {
        var pool = new TcpClientPool(server, new PoolOptions { MaxCapacity = workers });
        return new PooledPeer<TcpClientPoolConnections, PoolSlot<TcpClientConnection>>(OursName, new TcpClientPoolConnections(pool), pool, workers);
    }

    public static IConnectionsPeer HandWritten(EndPoint server, int workers)
    {
        var pool = new HandWrittenSocketPool(server, workers);
        return new PooledPeer<HandWrittenSocketPool, Socket>(HandWrittenName, pool, pool, workers);
    }
}
