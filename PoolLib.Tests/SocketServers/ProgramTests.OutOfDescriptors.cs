using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;

namespace PoolLib.Tests.SocketServers;

// A host out of file descriptors, made so by lowering its limit from here (Linux's prlimit).
public sealed partial class ProgramTests
{
    // With --when-full reject at the cap, the server accepts a waiting client only to close it. Out of file
    // descriptors, that accept fails and the client stays in the backlog, so the listener stays readable and an
    // accept retried at once fails at once, for ever. The server must pause before it retries, as it does below the cap.
    [Test]
    [CancelAfter(60_000)]
    public async Task Main_RejectWhenFullOutOfFileDescriptors_RetriesTheAcceptWithoutSpinning(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the test lowers the host's file descriptor limit with Linux's prlimit");
        TimeSpan measured = TimeSpan.FromSeconds(2);
        using Process host = StartHost(["tcp", "--port", "0", "--max-connections", "1", "--when-full", "reject"]);
        try
        {
            IPEndPoint tcp = await ReadListeningEndPointAsync(host, "tcp", cancellationToken);
            Task<string> output = host.StandardOutput.ReadToEndAsync(cancellationToken);
            using (Socket held = await SocketTestExtensions.ConnectTcpAsync(tcp, cancellationToken))
            {
                // Served: the host is at its cap, and its accept loop now waits for the next client to reject.
                await held.AssertEchoOnAsync(cancellationToken);
                ulong limit = OpenFileLimit.Set(host.Id, LowestFreeDescriptor(host.Id));
                using Socket waiting = await SocketTestExtensions.ConnectTcpAsync(tcp, cancellationToken);

                TimeSpan cpu = await ProcessorTimeOverAsync(host, measured, cancellationToken);

                Assert.That(cpu, Is.LessThan(measured * 0.3), $"the host used {cpu.TotalSeconds:F2} s of CPU in {measured.TotalSeconds} s with an accept that keeps failing");
                OpenFileLimit.Set(host.Id, limit);
                Assert.That(await waiting.ReadEndAsync(cancellationToken), Is.Zero, "with descriptors free again, the waiting client is accepted and rejected");
            }

            await SendSigTermAsync(host, cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            Assert.That(await output, Does.Contain($"TCP accept on {tcp} failed: {SocketError.TooManyOpenSockets}"), "the failed accepts are logged");
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    /// <summary>The lowest descriptor number <paramref name="pid"/> has free: with its limit there, it can open no more.</summary>
    private static ulong LowestFreeDescriptor(int pid)
    {
        HashSet<ulong> open = [.. Directory.EnumerateFiles($"/proc/{pid}/fd").Select(path => ulong.Parse(Path.GetFileName(path), System.Globalization.CultureInfo.InvariantCulture))];
        ulong free = 0;
        while (open.Contains(free))
        {
            free++;
        }

        return free;
    }

    /// <summary>The CPU time <paramref name="process"/> uses over the next <paramref name="span"/>.</summary>
    private static async Task<TimeSpan> ProcessorTimeOverAsync(Process process, TimeSpan span, CancellationToken cancellationToken)
    {
        process.Refresh();
        TimeSpan before = process.TotalProcessorTime;
        await Task.Delay(span, cancellationToken);
        process.Refresh();
        return process.TotalProcessorTime - before;
    }

    /// <summary>Another process's soft limit on open files (RLIMIT_NOFILE), through Linux's prlimit(2).</summary>
    private static class OpenFileLimit
    {
        private const int ResourceOpenFiles = 7;

        /// <summary>Sets the soft limit of <paramref name="pid"/>, keeping its hard limit.</summary>
        /// <returns>The soft limit it had.</returns>
        public static ulong Set(int pid, ulong softLimit)
        {
            Check(Prlimit(pid, ResourceOpenFiles, IntPtr.Zero, out ResourceLimit old));
            var limit = new ResourceLimit { Soft = softLimit, Hard = old.Hard };
            Check(Prlimit(pid, ResourceOpenFiles, ref limit, out _));
            return old.Soft;
        }

        private static void Check(int result)
        {
            if (result != 0)
            {
                throw new System.ComponentModel.Win32Exception(Marshal.GetLastPInvokeError());
            }
        }

        [DllImport("libc", EntryPoint = "prlimit", SetLastError = true)]
        private static extern int Prlimit(int pid, int resource, ref ResourceLimit newLimit, out ResourceLimit oldLimit);

        [DllImport("libc", EntryPoint = "prlimit", SetLastError = true)]
        private static extern int Prlimit(int pid, int resource, IntPtr noNewLimit, out ResourceLimit oldLimit);

        [StructLayout(LayoutKind.Sequential)]
        private struct ResourceLimit
        {
            public ulong Soft;
            public ulong Hard;
        }
    }
}
