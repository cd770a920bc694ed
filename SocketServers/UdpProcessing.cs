namespace SocketServers;

/// <summary>How a <see cref="UdpServer"/> receives datagrams and sends their replies.</summary>
public enum UdpProcessing
{
    /// <summary>
    /// The default. Each of <see cref="UdpServerOptions.ConcurrentReceives"/> dedicated threads waits for
    /// a datagram in a blocking receive on a pooled args and sends the reply itself before it receives again:
    /// a datagram never changes threads. The fastest on Linux, where every asynchronous receive that has to
    /// wait costs two thread hand-offs (the socket layer's event thread, then a thread-pool thread) and a
    /// separate reply stage a third.
    /// </summary>
    ReceiveThreads,

    /// <summary>
    /// Asynchronous receives on pooled args hand each datagram to a bounded Dataflow
    /// <see cref="System.Threading.Tasks.Dataflow.ActionBlock{TInput}"/> that sends the replies; up to
    /// <see cref="UdpServerOptions.MaxPendingDatagrams"/> received datagrams wait for their reply while
    /// receiving goes on. Holds no thread while the server is idle.
    /// </summary>
    ReplyBlock,
}
