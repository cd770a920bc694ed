using System.Runtime.InteropServices;

namespace SocketServers.Host;

/// <summary>
/// The process's limit on open file descriptors (RLIMIT_NOFILE, Linux), which caps the TCP connections the host can
/// hold: each is a descriptor, and the runtime needs some of its own. Out of descriptors, the thread pool cannot start
/// a thread (starting one opens descriptors), and the exception that makes escapes on a runtime thread and ends the
/// process; so the host raises the soft limit to the hard one and keeps connections a reserve below it.
/// </summary>
internal static partial class OpenFileLimit
{
    /// <summary>Descriptors kept free for the runtime (thread starts, code loaded later, log files) and for the
    /// sockets the servers accept only to close them.</summary>
    public const int Reserve = 64;

    // <sys/resource.h> on Linux.
    private const int RlimitNoFile = 7;
    private const string DescriptorsFolder = "/proc/self/fd";

    /// <summary>Raises the soft limit to the hard one, if it is lower (the runtime does this too as it starts), and
    /// says how many more descriptors the servers may use.</summary>
    /// <param name="serverSockets">Descriptors the servers open at start besides connections: listeners, UDP sockets.</param>
    /// <returns>The limit, the descriptors open now and how many connections fit; <see langword="null"/> off Linux,
    /// or when the limit cannot be read or is unlimited.</returns>
    public static Budget? ForConnections(int serverSockets)
    {
        if (!OperatingSystem.IsLinux() || getrlimit(RlimitNoFile, out ResourceLimit limit) != 0)
        {
            return null;
        }

        if (limit.Current < limit.Maximum)
        {
            ResourceLimit raised = limit with { Current = limit.Maximum };
            if (setrlimit(RlimitNoFile, in raised) == 0)
            {
                limit = raised;
            }
        }

        if (limit.Current >= int.MaxValue)
        {
            return null;
        }

        // The enumeration's own descriptor on the folder is listed too.
        int open = Directory.GetFileSystemEntries(DescriptorsFolder).Length - 1;
        int soft = (int)limit.Current;
        return new Budget(soft, open, soft - open - serverSockets - Reserve);
    }

    [LibraryImport("libc", SetLastError = true)]
    private static partial int getrlimit(int resource, out ResourceLimit limit);

    [LibraryImport("libc", SetLastError = true)]
    private static partial int setrlimit(int resource, in ResourceLimit limit);

    /// <summary>What the limit leaves for connections.</summary>
    /// <param name="Limit">The soft limit, after raising it.</param>
    /// <param name="Open">Descriptors open when it was read.</param>
    /// <param name="Connections">Connections that fit, after the servers' sockets and <see cref="Reserve"/>; may be
    /// 0 or less.</param>
    public readonly record struct Budget(int Limit, int Open, int Connections);

    /// <summary>struct rlimit: rlim_t is an unsigned long.</summary>
    [StructLayout(LayoutKind.Sequential)]
    private readonly record struct ResourceLimit(nuint Current, nuint Maximum);
}
