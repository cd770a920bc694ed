using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Runtime.InteropServices;
using System.Text;

namespace SocketServers.Tests;

// How the host stops with a client that never closes: the exit code says the grace period ran out, a second signal
// ends the grace period at once, and one signal received twice (sent to the process group under dotnet run) does not.
public sealed partial class ProgramTests
{
    // The RESP sample answers a request it had half of when the stop began, then waits for the client to close.
    private static readonly byte[] s_unfinishedReply = "-ERR Protocol error: unfinished request at end of input\r\n"u8.ToArray();

    // A supervisor that stops the host must learn that clients lost what was in flight: not exit code 0.
    [Test]
    [CancelAfter(30_000)]
    public Task Main_GracePeriodRunsOutWithAClientHeld_ExitsWithThree(CancellationToken cancellationToken) =>
        WithAHalfSentRequestHeldAsync(new() { ["SocketServers__Tcp__StopGracePeriod"] = "00:00:00.200" }, cancellationToken, async (host, _) =>
        {
            await SendSigTermAsync(host, cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            string stderr = await host.StandardError.ReadToEndAsync(cancellationToken);

            Assert.That(host.ExitCode, Is.EqualTo(3), stderr);
            Assert.That(stderr, Does.Contain("the stop grace period ran out"));
        });

    // The first Ctrl+C stops gracefully; the next one must not leave the user waiting for the grace period (here an
    // hour, and the Generic Host's own shutdown timeout as long), nor kill the host before it prints its counters. A
    // signal of another kind than the first counts however soon it comes.
    [Test]
    [CancelAfter(30_000)]
    public Task Main_SecondSignalWhileStopping_EndsTheGracePeriodAtOnce(CancellationToken cancellationToken) =>
        WithAHalfSentRequestHeldAsync(GracePeriodOfAnHour(), cancellationToken, async (host, _) =>
        {
            await SendSigTermAsync(host, cancellationToken);
            while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line && line != "Stopping...")
            {
                // The lines the host printed before it began to stop.
            }

            await SendSignalAsync(host, "INT", cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            string rest = await host.StandardOutput.ReadToEndAsync(cancellationToken);

            Assert.That(host.ExitCode, Is.EqualTo(3));
            Assert.That(rest, Does.Contain("Stopping now").And.Contain("resp: 1 connections (peak 1)"));
        });

    // timeout, a supervisor or a terminal signals the process group; under dotnet run the host gets the signal twice,
    // directly and forwarded. The second delivery, sent as soon as the kernel has delivered the first, is the same
    // stop: the client gets its answer and end of stream, closes, and the host exits 0 with nothing cut short.
    [Test]
    [CancelAfter(30_000)]
    public Task Main_SigTermDeliveredTwiceBackToBack_StopsGracefully(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the test reads the pending signals from /proc");
        return WithAHalfSentRequestHeldAsync(GracePeriodOfAnHour(), cancellationToken, async (host, held) =>
        {
            SendSigTermDelivered(host, cancellationToken);
            SendSigTermDelivered(host, cancellationToken);
            byte[] answer = await held.ReceiveToEndAsync(cancellationToken);
            held.Close();
            await host.WaitForExitAsync(cancellationToken);
            string rest = await host.StandardOutput.ReadToEndAsync(cancellationToken);

            Assert.That(answer, Is.EqualTo(s_unfinishedReply), Encoding.ASCII.GetString(answer));
            Assert.That(host.ExitCode, Is.Zero, await host.StandardError.ReadToEndAsync(cancellationToken));
            Assert.That(rest, Does.Not.Contain("Stopping now").And.Contain("resp: 1 connections (peak 1)").And.Contain("0 dropped connections"));
        });
    }

    /// <summary>Runs <paramref name="test"/> with the RESP sample's host, started with <paramref name="environment"/>,
    /// holding a half-sent request (see <see cref="HoldAHalfSentRequestAsync"/>); ends the host if the test left it running.</summary>
    private static async Task WithAHalfSentRequestHeldAsync(
        Dictionary<string, string> environment, CancellationToken cancellationToken, Func<Process, Socket, Task> test)
    {
        Assume.That(OperatingSystem.IsWindows(), Is.False, "the stop signals are POSIX signals, sent with kill");
        using Process host = StartHost(["resp", "--port", "0"], environment);
        try
        {
            using Socket held = await HoldAHalfSentRequestAsync(host, cancellationToken);
            await test(host, held);
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    /// <summary>A stop grace period of an hour, and the Generic Host's shutdown timeout as long: only the client's close
    /// or a second signal ends such a stop.</summary>
    private static Dictionary<string, string> GracePeriodOfAnHour() =>
        new() { ["SocketServers__Tcp__StopGracePeriod"] = "01:00:00", ["DOTNET_shutdownTimeoutSeconds"] = "3600" };

    /// <summary>Connects to the host's RESP server, has one request answered, and leaves the next one half-sent, which
    /// the server holds until the stop; the client then neither sends nor closes.</summary>
    private static async Task<Socket> HoldAHalfSentRequestAsync(Process host, CancellationToken cancellationToken)
    {
        IPEndPoint resp = await ReadListeningEndPointAsync(host, "resp", cancellationToken);
        Socket client = await SocketTestExtensions.ConnectTcpAsync(resp, cancellationToken);
        try
        {
            // One write: the server reads both at once, answers the first and keeps the second's start.
            await client.SendAllAsync("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI"u8.ToArray(), cancellationToken);
            byte[] pong = new byte[7];
            Assert.That(await client.ReceiveExactlyAsync(pong, cancellationToken), Is.EqualTo(pong.Length));
            Assert.That(pong, Is.EqualTo("+PONG\r\n"u8.ToArray()));
            return client;
        }
        catch
        {
            client.Dispose();
            throw;
        }
    }

    /// <summary>Sends SIGTERM with kill(2), and waits until the kernel has delivered it to the host: one sent while the
    /// last is still pending would merge with it into one delivery. A system call rather than the kill command, whose
    /// start on a loaded machine could take longer than a forward does.</summary>
    private static void SendSigTermDelivered(Process host, CancellationToken cancellationToken)
    {
        // SIGTERM is signal 15 on Linux: bit 14 of the mask.
        const int SigTerm = 15;
        const ulong SigTermBit = 1UL << (SigTerm - 1);
        Assert.That(kill(host.Id, SigTerm), Is.Zero, () => $"kill failed: errno {Marshal.GetLastPInvokeError()}");
        while ((PendingSignals(host) & SigTermBit) != 0)
        {
            cancellationToken.ThrowIfCancellationRequested();
            Thread.Yield();
        }
    }

    [DllImport("libc", SetLastError = true)]
    private static extern int kill(int pid, int signal);

    /// <summary>The signals pending for the host as a whole (the ShdPnd mask of /proc/PID/status).</summary>
    private static ulong PendingSignals(Process host)
    {
        const string Field = "ShdPnd:";
        string line = File.ReadLines($"/proc/{host.Id.ToString(CultureInfo.InvariantCulture)}/status").Single(line => line.StartsWith(Field, StringComparison.Ordinal));
        return ulong.Parse(line.AsSpan(Field.Length).Trim(), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture);
    }
}
