using System.Net;

namespace PoolBench.Echo.Servers;

/// <summary>An echo server the <c>echo</c> scenario loads: where it listens, and whether it shares our process.</summary>
internal interface IEchoServer : IAsyncDisposable
{
    /// <summary>The name in the tables and the JSON <c>server</c> key.</summary>
    string Name { get; }

    EndPoint TcpEndPoint { get; }

    /// <summary>Gets where it serves UDP; <see langword="null"/> for a TCP-only server (Kestrel), which the UDP cells skip.</summary>
    EndPoint? UdpEndPoint { get; }

    /// <summary>True when the server runs in this process, so its allocations can be counted.</summary>
    bool InProcess { get; }

    /// <summary>The resident memory of the server's own process in MiB, where it has one and it can be read.</summary>
    double? ProcessMemoryMib { get; }

    /// <summary>The processor time the server's own process has used so far, in seconds, where it has one.</summary>
    double? ProcessCpuSeconds { get; }

    /// <summary>TCP connections the server has accepted since it started, where this process can read its counter.</summary>
    long? AcceptedTcpConnections { get; }

    /// <summary>
    /// Reads the server's managed heap after a full collection, and the memory its GC has committed, in
    /// MiB; null where it cannot be read (a server that is not .NET, or not ours).
    /// </summary>
    Task<(double HeapMib, double CommittedMib)?> ReadManagedHeapAsync();

    /// <summary>
    /// Reads the stats of the server's own process without a collection: among them the bytes it has allocated since
    /// it started, leaving out what reading them allocates; null where they cannot be read (a server in this process,
    /// whose allocations the benchmark counts itself, or one that is not ours).
    /// </summary>
    Task<HostStats?> ReadStatsAsync();
}
