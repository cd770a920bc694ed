using System.Diagnostics;
using System.Net;
using System.Net.Sockets;

namespace SocketServers.Tests;

// How the host stops with a client that never closes: the exit code says the grace period ran out, and a second
// signal ends the grace period at once.
public sealed partial class ProgramTests
{
    // A supervisor that stops the host must learn that clients lost what was in flight: not exit code 0.
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_GracePeriodRunsOutWithAClientHeld_ExitsWithThree(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsWindows(), Is.False, "SIGTERM is a POSIX signal");
        using Process host = StartHost(["tcp", "--port", "0"], new() { ["SocketServers__Tcp__StopGracePeriod"] = "00:00:00.200" });
        try
        {
            using Socket held = await HoldAConnectionAsync(host, cancellationToken);

            await SendSigTermAsync(host, cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            string stderr = await host.StandardError.ReadToEndAsync(cancellationToken);

            Assert.That(host.ExitCode, Is.EqualTo(3), stderr);
            Assert.That(stderr, Does.Contain("the stop grace period ran out"));
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    // The first Ctrl+C stops gracefully; the next one must not leave the user waiting for the grace period (here an
    // hour, and the Generic Host's own shutdown timeout as long), nor kill the host before it prints its counters.
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_SecondInterruptWhileStopping_EndsTheGracePeriodAtOnce(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsWindows(), Is.False, "SIGINT is sent with kill");
        using Process host = StartHost(
            ["tcp", "--port", "0"],
            new() { ["SocketServers__Tcp__StopGracePeriod"] = "01:00:00", ["DOTNET_shutdownTimeoutSeconds"] = "3600" });
        try
        {
            using Socket held = await HoldAConnectionAsync(host, cancellationToken);
            await SendSignalAsync(host, "INT", cancellationToken);
            while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line && line != "Stopping...")
            {
                // The lines the host printed before it began to stop.
            }

            await SendSignalAsync(host, "INT", cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            string rest = await host.StandardOutput.ReadToEndAsync(cancellationToken);

            Assert.That(host.ExitCode, Is.EqualTo(3));
            Assert.That(rest, Does.Contain("Stopping now").And.Contain("tcp: 1 connections (peak 1)"));
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    /// <summary>Connects to the host's TCP server and gets one echo; the client then neither sends nor closes.</summary>
    private static async Task<Socket> HoldAConnectionAsync(Process host, CancellationToken cancellationToken)
    {
        IPEndPoint tcp = await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken);
        Socket client = await SocketTestExtensions.ConnectTcpAsync(tcp, cancellationToken);
        try
        {
            await client.AssertEchoOnAsync(cancellationToken);
            return client;
        }
        catch
        {
            client.Dispose();
            throw;
        }
    }
}
