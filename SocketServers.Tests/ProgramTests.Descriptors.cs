using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;

namespace SocketServers.Tests;

// The host under a low open-file limit: it serves what fits, queues the rest and never runs out of descriptors.
public sealed partial class ProgramTests
{
    // 256 descriptors hold the runtime's own (about 140) and some connections, far fewer than --max-connections 1000.
    // Out of descriptors, the runtime could not start a thread and the host died (exit 134); so it must serve what fits,
    // leave more clients waiting than its reserve could take, and keep serving the connections it holds.
    [Test]
    [CancelAfter(60_000)]
    public async Task Main_OpenFileLimitBelowMaxConnections_ServesWhatFitsQueuesTheRestAndKeepsRunning(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the open-file limit is read on Linux");
        using Process host = StartHost(["tcp", "--port", "0", "--min-data-rate", "0", "--idle-timeout", "0"], ulimit: "-n 256");
        var held = new List<Socket>();
        var waiting = new List<Socket>();
        try
        {
            // The server's start line says how many connections it serves: as many as fit, not the 1000 asked for.
            Match start = Match.Empty;
            while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line && !line.StartsWith("tcp echo listening on ", StringComparison.Ordinal))
            {
                start = start.Success ? start : Regex.Match(line, @"TCP echo server listening on (\S+) \(max (\d+) connections");
            }

            Assert.That(start.Success, Is.True, "the server's start line");
            IPEndPoint tcp = IPEndPoint.Parse(start.Groups[1].Value);
            int fits = int.Parse(start.Groups[2].Value, CultureInfo.InvariantCulture);
            for (int i = 0; i < fits; i++)
            {
                held.Add(await SocketTestExtensions.ConnectTcpAsync(tcp, cancellationToken));
                await SocketTestExtensions.WithinAsync(held[^1].AssertEchoOnAsync, $"the echo on connection {i + 1} of {fits}", cancellationToken);
            }

            string? warning = await SocketTestExtensions.WithinAsync(
                token => host.StandardError.ReadLineAsync(token).AsTask(), "the host's line about the open-file limit", cancellationToken);
            Assert.That(warning, Does.Contain($"leaves room for {fits} TCP connections, not the 1000 of --max-connections: serving at most {fits} at once"));

            // More waiting clients than the host has descriptors left: accepted, they would exhaust them.
            for (int i = 0; i < 128; i++)
            {
                waiting.Add(await SocketTestExtensions.ConnectTcpAsync(tcp, cancellationToken));
                await waiting[^1].SendAllAsync(new byte[] { (byte)i }, cancellationToken);
            }

            foreach (Socket client in held)
            {
                await client.AssertEchoOnAsync(cancellationToken);
            }

            held[0].Dispose();
            held.RemoveAt(0);
            byte[] echo = new byte[1];
            Assert.That(await waiting[0].ReceiveExactlyAsync(echo, cancellationToken), Is.EqualTo(1), "the first waiting client takes the place that came free");
            Assert.That(echo[0], Is.Zero);
            await held[^1].AssertEchoOnAsync(cancellationToken);
            held.ForEach(client => client.Dispose());
            waiting.ForEach(client => client.Dispose());

            await SendSigTermAsync(host, cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            string output = await host.StandardOutput.ReadToEndAsync(cancellationToken);

            Assert.That(host.ExitCode, Is.Zero, output);
            Assert.That(output, Does.Not.Contain("TooManyOpenSockets"), "no accept ran out of descriptors");
        }
        finally
        {
            held.ForEach(client => client.Dispose());
            waiting.ForEach(client => client.Dispose());
            KillIfRunning(host);
        }
    }

    // The runtime raises the soft limit to the hard one as it starts, and the host does if it did not: connections are
    // counted against the hard limit, so 200 soft descriptors of 20,000 hard ones lower nothing.
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_SoftOpenFileLimitBelowHard_RaisesItToTheHardOne(CancellationToken cancellationToken)
    {
        Assume.That(OperatingSystem.IsLinux(), Is.True, "the open-file limit is read on Linux");
        using Process host = StartHost(["tcp", "--port", "0"], ulimit: "-S -n 200");
        try
        {
            await ReadListeningEndPointAsync(host, "tcp echo", cancellationToken);
            string limits = await File.ReadAllTextAsync($"/proc/{host.Id}/limits", cancellationToken);
            Match openFiles = Regex.Match(limits, @"Max open files\s+(\d+)\s+(\d+)");

            Assert.That(openFiles.Success, Is.True, limits);
            Assert.That(openFiles.Groups[1].Value, Is.EqualTo(openFiles.Groups[2].Value), "the soft limit is the hard one");
        }
        finally
        {
            KillIfRunning(host);
        }
    }
}
