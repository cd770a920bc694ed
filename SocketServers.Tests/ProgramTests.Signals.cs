using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;

namespace SocketServers.Tests;

// Signals to a running host: SIGTERM stops it, SIGUSR1 and SIGUSR2 print the metrics; its GC settings; two hosts on one port.
public sealed partial class ProgramTests
{
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_SigTerm_StopsGracefullyAndPrintsCounters(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsWindows(), Is.False, "SIGTERM is a POSIX signal");
        using Process host = StartHost(["both", "--port", "0"]);
        try
        {
            IPEndPoint tcp = await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken);
            IPEndPoint udp = await ReadListeningEndPointAsync(host, "udp echo", cancellationToken);
            await SocketTestExtensions.AssertEchoesAsync(tcp, 5000, cancellationToken);
            using (var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp))
            {
                byte[] datagram = [1, 2, 3, 4];
                await client.SendToAsync(datagram, SocketFlags.None, udp, cancellationToken);
                byte[] echo = new byte[16];
                int received = await client.ReceiveAsync(echo, SocketFlags.None, cancellationToken);
                Assert.That(echo[..received], Is.EqualTo(datagram));
            }

            await SendSigTermAsync(host, cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            string rest = await host.StandardOutput.ReadToEndAsync(cancellationToken);

            Assert.That(host.ExitCode, Is.Zero);
            Assert.That(rest, Does.Contain("tcp: 1 connections (peak 1)").And.Contain("5000 bytes echoed, 0 dropped connections"));
            Assert.That(rest, Does.Contain("udp: 1 datagrams and 4 bytes echoed, 0 dropped datagrams"));
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Main_SigUsr1_PrintsTheMetricsAndKeepsServing(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "SIGUSR1 is handled on Linux");
        using Process host = StartHost(["tcp", "--port", "0"]);
        try
        {
            IPEndPoint tcp = await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken);
            await SocketTestExtensions.AssertEchoesAsync(tcp, 100, cancellationToken);

            await SendSignalAsync(host, "USR1", cancellationToken);
            var stats = new List<string>();
            while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line && !line.StartsWith("stats: process.managed_heap_bytes", StringComparison.Ordinal))
            {
                stats.Add(line);
            }

            Assert.That(stats, Has.One.StartsWith($"stats: socketservers.sent_bytes{{network.transport=tcp,server.address=127.0.0.1,server.port={tcp.Port}}} 100 per_second "));
            Assert.That(stats.First(line => line.StartsWith("stats: ", StringComparison.Ordinal)), Does.Match(@"^stats: time \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z interval_seconds \d+\.\d{3}$"));
            Assert.That(stats, Has.Member($"stats: pool.objects.max{{pool.name=tcp-echo-args@{tcp}}} 1000"));
            Assert.That(stats, Has.One.Matches(@"^stats: process\.allocated_bytes [1-9]\d* by_stats 0$"), "the first printout, with nothing printed before it");
            Assert.That(host.HasExited, Is.False, "SIGUSR1 does not stop the host");
            await SocketTestExtensions.AssertEchoesAsync(tcp, 10, cancellationToken);
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    // A signal someone sends to look at a server in production must not pause it: SIGUSR1 runs no collection, and two
    // printouts in a row on an idle host show the same number of full (gen2) collections. SIGUSR2 asks for one first,
    // for measurements (PoolBench reads the heap so), and each of its printouts counts one more.
    [TestCase("USR1", false)]
    [TestCase("USR2", true)]
    [CancelAfter(30_000)]
    public async Task Main_StatsSignal_CollectsOnlyOnSigUsr2(string signal, bool collects, CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the stats signals are handled on Linux");
        using Process host = StartHost(["tcp", "--port", "0"]);
        try
        {
            await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken);

            long first = await ReadFullCollectionsOnSignalAsync(host, signal, cancellationToken);
            long second = await ReadFullCollectionsOnSignalAsync(host, signal, cancellationToken);

            Assert.That(second - first, collects ? Is.GreaterThan(0) : Is.Zero, $"full collections between two SIG{signal} printouts");
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    // Workstation GC sizes generation 0 from the processor's cache; DOTNET_GCgen0size makes this machine's GC size
    // it as a server CPU with a large cache would (160 MiB). The host's runtimeconfig caps the budget whatever the cache.
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_LargeCacheMachine_RunsWithTheCappedGen0Budget(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the stats signals are handled on Linux");
        using Process host = StartHost(["tcp", "--port", "0"], new() { ["DOTNET_GCgen0size"] = "0xA000000" });
        try
        {
            await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken);

            await SendSignalAsync(host, "USR1", cancellationToken);
            string? settings = null;
            while (settings is null && await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line)
            {
                settings = line.StartsWith("stats: process.gc.settings ", StringComparison.Ordinal) ? line : null;
            }

            Assert.That(settings, Is.EqualTo("stats: process.gc.settings server false concurrent true gen0_max_budget 16777216"));
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    // Two hosts on one port with --reuse-port: the kernel spreads 200 TCP connections and 2,000
    // datagrams from 20 source ports over both, every echo is exact, and once one host has stopped,
    // every new connection is served by the other. The final counters each host prints on SIGTERM
    // say who served what.
    [Test]
    [CancelAfter(60_000)]
    public async Task Main_TwoHostsWithReusePort_ShareTheLoadAndTheSurvivorTakesOver(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "reuse-port is Linux only");
        int port = FreePortForTcpAndUdp();
        string[] args = ["both", "--port", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "--reuse-port"];
        using Process first = StartHost(args);
        using Process second = StartHost(args);
        try
        {
            var tcp = new IPEndPoint(IPAddress.Loopback, port);
            foreach (Process host in new[] { first, second })
            {
                Assert.That(await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken), Is.EqualTo(tcp));
                Assert.That(await ReadListeningEndPointAsync(host, "udp echo", cancellationToken), Is.EqualTo(tcp));
            }

            for (int i = 0; i < 200; i++)
            {
                await SocketTestExtensions.AssertEchoesAsync(tcp, 64, cancellationToken);
            }

            await UdpEchoTesting.AssertEchoesAsync(tcp, senders: 20, each: 100, cancellationToken);

            (long firstConnections, long firstDatagrams) = await StopAndReadCountersAsync(first, cancellationToken);
            for (int i = 0; i < 50; i++)
            {
                await SocketTestExtensions.AssertEchoesAsync(tcp, 64, cancellationToken);
            }

            (long secondConnections, long secondDatagrams) = await StopAndReadCountersAsync(second, cancellationToken);

            Assert.That(firstConnections, Is.GreaterThan(0), "the first host served some of the 200");
            Assert.That(secondConnections, Is.GreaterThan(50), "the second host served some of the 200, and the 50 after");
            Assert.That(firstConnections + secondConnections, Is.EqualTo(250));
            Assert.That(firstDatagrams, Is.GreaterThan(0));
            Assert.That(secondDatagrams, Is.GreaterThan(0));
            Assert.That(firstDatagrams + secondDatagrams, Is.EqualTo(2000));
        }
        finally
        {
            KillIfRunning(first);
            KillIfRunning(second);
        }
    }

    /// <summary>Sends <paramref name="signal"/> and reads the gen2 collection count from the printout it causes.</summary>
    private static async Task<long> ReadFullCollectionsOnSignalAsync(Process host, string signal, CancellationToken cancellationToken)
    {
        await SendSignalAsync(host, signal, cancellationToken);
        const string Prefix = "stats: process.gc.collections ";
        while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line)
        {
            if (line.StartsWith(Prefix, StringComparison.Ordinal))
            {
                Match gen2 = Regex.Match(line, @" gen2 (\d+)$");
                Assert.That(gen2.Success, Is.True, line);
                return long.Parse(gen2.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
            }
        }

        Assert.Fail($"the host ended without printing '{Prefix}'");
        throw new UnreachableException();
    }

    /// <summary>Stops a host with SIGTERM and reads the TCP connections and UDP datagrams it says it served.</summary>
    private static async Task<(long Connections, long Datagrams)> StopAndReadCountersAsync(Process host, CancellationToken cancellationToken)
    {
        await SendSigTermAsync(host, cancellationToken);
        await host.WaitForExitAsync(cancellationToken);
        string rest = await host.StandardOutput.ReadToEndAsync(cancellationToken);
        Match tcp = Regex.Match(rest, @"tcp: (\d+) connections");
        Match udp = Regex.Match(rest, @"udp: (\d+) datagrams");
        Assert.That(tcp.Success && udp.Success, Is.True, rest);
        return (long.Parse(tcp.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture), long.Parse(udp.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture));
    }

    private static Task SendSigTermAsync(Process host, CancellationToken cancellationToken) => SendSignalAsync(host, "TERM", cancellationToken);

    private static async Task SendSignalAsync(Process host, string signal, CancellationToken cancellationToken)
    {
        using Process kill = Process.Start("kill", [$"-{signal}", host.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]);
        await kill.WaitForExitAsync(cancellationToken);
        Assert.That(kill.ExitCode, Is.Zero);
    }
}
