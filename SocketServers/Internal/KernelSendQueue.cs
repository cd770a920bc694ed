using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace SocketServers.Internal;

/// <summary>
/// The bytes a TCP socket's kernel send queue holds that its peer has not yet acknowledged (Linux, SIOCOUTQ). A send
/// waiting for room completes only once about a third of that queue is free, which for a client reading slowly may
/// take minutes; the queue's drain shows the client reading meanwhile.
/// </summary>
internal static partial class KernelSendQueue
{
    // <asm-generic/ioctls.h>: SIOCOUTQ is TIOCOUTQ.
    private const nuint SiocOutQ = 0x5411;

    /// <summary>Gets the bytes queued; <see langword="null"/> off Linux, or when the socket cannot say (closed meanwhile).</summary>
    public static int? Bytes(Socket socket)
    {
        if (!OperatingSystem.IsLinux())
        {
            return null;
        }

        try
        {
            return ioctl(socket.SafeHandle, SiocOutQ, out int bytes) == 0 ? bytes : null;
        }
        catch (ObjectDisposedException)
        {
            return null;
        }
    }

    [LibraryImport("libc", SetLastError = true)]
    private static partial int ioctl(SafeSocketHandle descriptor, nuint request, out int value);
}
