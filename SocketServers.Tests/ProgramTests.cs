using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;

namespace SocketServers.Tests;

/// <summary>The console host, run as a process: <c>dotnet SocketServers.Host.dll ...</c> from the test output.</summary>
public sealed partial class ProgramTests
{
    private const string HostFile = "SocketServers.Host.dll";

    [Test]
    [CancelAfter(30_000)]
    public async Task Main_Help_ExitsZeroAndPrintsUsage(CancellationToken cancellationToken)
    {
        (int exitCode, string stdout, string stderr) = await RunToEndAsync(["--help"], cancellationToken);

        Assert.That(exitCode, Is.Zero);
        Assert.That(stdout, Does.Contain("Usage:").And.Contain("SocketServers.Host [<servers>] [options]"));
        Assert.That(stdout, Does.Contain("--port <N>").And.Contain("[default: 7007]").And.Contain("--udp-allow-privileged-ports"));
        Assert.That(stderr, Is.Empty);
    }

    // The usage must say what the parser takes and the README's options table gives: every choice of servers, and the
    // whole range of --udp-receives besides the range of its automatic count.
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_Help_GivesEveryServerChoiceAndTheFullUdpReceivesRange(CancellationToken cancellationToken)
    {
        (int exitCode, string stdout, _) = await RunToEndAsync(["--help"], cancellationToken);

        string udpReceives = stdout.Split('\n').Single(line => line.TrimStart().StartsWith("--udp-receives ", StringComparison.Ordinal));
        Assert.That(exitCode, Is.Zero);
        Assert.That(stdout, Does.Contain("<tcp|udp|both|resp>"));
        Assert.That(udpReceives, Does.Contain("UDP receive threads, 1 to 256;").And.Contain("from 1 to 16"));
    }

    // The RESP sample with the TCP server's limits: the client over --max-connections is closed at once.
    [Test]
    [CancelAfter(30_000)]
    public async Task Main_Resp_ServesRedisCommandsWithTheTcpLimits(CancellationToken cancellationToken)
    {
        using Process host = StartHost(["resp", "--port", "0", "--max-connections", "1", "--when-full", "reject"]);
        try
        {
            IPEndPoint resp = await ReadListeningEndPointAsync(host, "resp", cancellationToken);
            string[] replies;
            string overCap;
            using (LineClient client = await LineClient.ConnectAsync(resp, cancellationToken))
            {
                await client.SendAsync("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n7\r\n*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n", cancellationToken);
                replies = [(await client.ReadLineAsync(cancellationToken))!, (await client.ReadLineAsync(cancellationToken))!];
                using LineClient over = await LineClient.ConnectAsync(resp, cancellationToken);
                overCap = await over.ReadToEndAsync(cancellationToken);
            }

            await SendSigTermAsync(host, cancellationToken);
            await host.WaitForExitAsync(cancellationToken);

            Assert.That(replies, Is.EqualTo(new[] { "+OK\r", ":8\r" }));
            Assert.That(overCap, Is.Empty, "closed at once: over --max-connections with --when-full reject");
            Assert.That(host.ExitCode, Is.Zero);
            Assert.That(await host.StandardOutput.ReadToEndAsync(cancellationToken), Does.Contain("resp: 1 connections (peak 1)").And.Contain("1 rejected"));
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    [Test]
    [CancelAfter(30_000)]
    public Task Main_SettingsFileAndEnvironment_ChooseTheServersAndTheirOptions(CancellationToken cancellationToken) =>
        WithSettingsFileAsync("""{ "SocketServers": { "Servers": "udp", "Udp": { "Port": 1 } } }""", cancellationToken, async environment =>
        {
            using Process host = StartHost([], new() { ["DOTNET_ENVIRONMENT"] = environment, ["SocketServers__Udp__Port"] = "0" });
            try
            {
                var lines = new List<string>();
                while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line && line != "Press Ctrl+C to stop.")
                {
                    lines.Add(line);
                }

                Assert.That(lines.Where(line => line.Contains(" echo listening on ", StringComparison.Ordinal)), Has.Exactly(1).StartsWith("udp echo listening on 127.0.0.1:"));
                Assert.That(lines, Has.None.Contains("udp echo listening on 127.0.0.1:1"), "the environment overrides the file");
                await SendSigTermAsync(host, cancellationToken);
                await host.WaitForExitAsync(cancellationToken);
                Assert.That(host.ExitCode, Is.Zero);
            }
            finally
            {
                KillIfRunning(host);
            }
        });

    [Test]
    [CancelAfter(30_000)]
    public Task Main_SettingsFileNotJson_ExitsWithOneLine(CancellationToken cancellationToken) =>
        WithSettingsFileAsync("""{ "SocketServers": { "Tcp": {""", cancellationToken, async environment =>
        {
            (int exitCode, string stdout, string stderr) = await RunToEndAsync([], cancellationToken, new() { ["DOTNET_ENVIRONMENT"] = environment });

            Assert.That(exitCode, Is.EqualTo(2));
            Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
            Assert.That(stderr, Does.StartWith("SocketServers: Failed to load configuration from file").And.Contain($"appsettings.{environment}.json"));
            Assert.That(stdout, Is.Empty);
        });

    // A misspelled section leaves every setting in it unread: the host would start with none of them.
    [Test]
    [CancelAfter(30_000)]
    public Task Main_SettingsFileWithMisspelledSection_ExitsWithOneLineNamingIt(CancellationToken cancellationToken) =>
        WithSettingsFileAsync("""{ "SocketServer": { "Servers": "udp" } }""", cancellationToken, async environment =>
        {
            (int exitCode, string stdout, string stderr) = await RunToEndAsync([], cancellationToken, new() { ["DOTNET_ENVIRONMENT"] = environment });

            Assert.That(exitCode, Is.EqualTo(2));
            Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
            Assert.That(stderr, Does.StartWith($"SocketServers: 'SocketServer' in appsettings.{environment}.json is not a section this program reads"));
            Assert.That(stdout, Is.Empty);
        });

    // Each setting is invalid before anything binds, so a host that took it would listen on 7007 and time out.
    [TestCase("SocketServers__Tcp__Port", "99999", "'SocketServers:Tcp:Port' = '99999'")]
    [TestCase("SocketServers__Tcp__MaxConection", "5", "'SocketServers:Tcp:MaxConection' is not a setting")]
    [TestCase("SocketServers__Servers", "all", "'SocketServers:Servers' expects tcp, udp or both")]
    [TestCase("SocketServers__Servrs", "tcp", "'SocketServers:Servrs' is not a setting")]
    [TestCase("SocketServers__Udp__Prot", "1", "'SocketServers:Udp:Prot' is not a setting")]
    [TestCase("SocketServers__Udp__Processing", "Threads", "'SocketServers:Udp:Processing' expects ReceiveThreads or ReplyBlock, not 'Threads'.")]
    [CancelAfter(30_000)]
    public async Task Main_InvalidSetting_ExitsWithOneLineNamingIt(string variable, string value, string expected, CancellationToken cancellationToken)
    {
        (int exitCode, string stdout, string stderr) = await RunToEndAsync([], cancellationToken, new() { [variable] = value });

        Assert.That(exitCode, Is.EqualTo(2));
        Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
        Assert.That(stderr, Does.StartWith("SocketServers: ").And.Contain(expected));
        Assert.That(stdout, Is.Empty);
    }

    // NLog refuses the first file (a target type it does not know); the second is not XML at all, which NLog reading it on
    // its own ignored, losing every line. Either ended the start with a stack trace or went on in silence.
    [TestCase("""<nlog throwConfigExceptions="true"><targets><target type="Nope" name="x" /></targets><rules><logger name="*" writeTo="x" /></rules></nlog>""", "unknown type-alias: 'Nope'")]
    [TestCase("<nlog><targets>", "Invalid XML document")]
    [CancelAfter(60_000)]
    public Task Main_InvalidLoggingConfiguration_ExitsWithOneLineNamingTheFile(string content, string expected, CancellationToken cancellationToken) =>
        WithHostCopyAsync("NLog.config", content, cancellationToken, async directory =>
        {
            (int exitCode, string stdout, string stderr) = await RunToEndAsync(["tcp", "--port", "0"], cancellationToken, directory: directory);

            Assert.That(exitCode, Is.EqualTo(2), stdout + stderr);
            Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
            Assert.That(stderr, Does.StartWith($"SocketServers: {Path.Combine(directory, "NLog.config")} is not a valid NLog configuration: ").And.Contain(expected));
            Assert.That(stdout, Is.Empty);
        });

    [TestCase("--bogus")]
    [TestCase("--port 99999")]
    [TestCase("--max-connections")]
    [CancelAfter(30_000)]
    public async Task Main_BadArgument_ExitsNonZeroWithOneStderrLine(string commandLine, CancellationToken cancellationToken)
    {
        (int exitCode, string stdout, string stderr) = await RunToEndAsync(commandLine.Split(' '), cancellationToken);

        Assert.That(exitCode, Is.Not.Zero);
        Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
        Assert.That(stderr, Does.StartWith("SocketServers: ").And.Not.Contain("   at "));
        Assert.That(stdout, Is.Empty);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task Main_PortInUse_ExitsNonZeroWithOneStderrLine(CancellationToken cancellationToken)
    {
        using var occupant = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        occupant.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        occupant.Listen();
        int port = ((IPEndPoint)occupant.LocalEndPoint!).Port;

        (int exitCode, _, string stderr) = await RunToEndAsync(["tcp", "--port", port.ToString(System.Globalization.CultureInfo.InvariantCulture)], cancellationToken);

        Assert.That(exitCode, Is.Not.Zero);
        Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
        Assert.That(stderr, Does.Contain("already in use").And.Contain($"127.0.0.1:{port}"));
    }

    /// <summary>A port that is free on 127.0.0.1 for TCP and for UDP at the moment of asking.</summary>
    private static int FreePortForTcpAndUdp()
    {
        while (true)
        {
            using var tcp = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            tcp.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            int port = ((IPEndPoint)tcp.LocalEndPoint!).Port;
            using var udp = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
            try
            {
                udp.Bind(new IPEndPoint(IPAddress.Loopback, port));
                return port;
            }
            catch (SocketException)
            {
                // Taken for UDP: try another.
            }
        }
    }

    /// <summary>Ends a host a test left running (it failed or timed out), with whatever it started.</summary>
    private static void KillIfRunning(Process host)
    {
        if (!host.HasExited)
        {
            host.Kill(entireProcessTree: true);
        }
    }

    /// <summary>Starts the host; with <paramref name="ulimit"/> (such as <c>-n 256</c>), under the limit the shell's ulimit
    /// sets with those arguments; from <paramref name="directory"/>, a copy of the test output, when given.</summary>
    private static Process StartHost(IEnumerable<string> args, Dictionary<string, string>? environment = null, string? ulimit = null, string? directory = null)
    {
        var startInfo = new ProcessStartInfo(ulimit is null ? "dotnet" : "sh")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
            WorkingDirectory = directory ?? AppContext.BaseDirectory,
        };
        if (ulimit is not null)
        {
            // exec: the host is the process started, so its id is the one signals and the test's kill reach.
            startInfo.ArgumentList.Add("-c");
            startInfo.ArgumentList.Add("ulimit $0 && exec dotnet \"$@\"");
            startInfo.ArgumentList.Add(ulimit);
        }

        startInfo.ArgumentList.Add(Path.Combine(directory ?? AppContext.BaseDirectory, HostFile));
        foreach (string arg in args)
        {
            startInfo.ArgumentList.Add(arg);
        }

        foreach ((string name, string value) in environment ?? [])
        {
            startInfo.Environment[name] = value;
        }

        return Process.Start(startInfo)!;
    }

    private static async Task<(int ExitCode, string Stdout, string Stderr)> RunToEndAsync(
        string[] args, CancellationToken cancellationToken, Dictionary<string, string>? environment = null, string? directory = null)
    {
        using Process host = StartHost(args, environment, directory: directory);
        try
        {
            Task<string> stdout = host.StandardOutput.ReadToEndAsync(cancellationToken);
            Task<string> stderr = host.StandardError.ReadToEndAsync(cancellationToken);
            await host.WaitForExitAsync(cancellationToken);
            return (host.ExitCode, await stdout, await stderr);
        }
        finally
        {
            KillIfRunning(host);
        }
    }

    /// <summary>Runs <paramref name="test"/> with <c>appsettings.{environment}.json</c> beside the host holding
    /// <paramref name="json"/>, for a new environment name that no other test's host reads; the host reads the file
    /// as it reads appsettings.json when <c>DOTNET_ENVIRONMENT</c> names it.</summary>
    private static async Task WithSettingsFileAsync(string json, CancellationToken cancellationToken, Func<string, Task> test)
    {
        string environment = $"ProgramTests{Guid.NewGuid():N}";
        string settingsFile = Path.Combine(AppContext.BaseDirectory, $"appsettings.{environment}.json");
        await File.WriteAllTextAsync(settingsFile, json, cancellationToken);
        try
        {
            await test(environment);
        }
        finally
        {
            File.Delete(settingsFile);
        }
    }

    /// <summary>Runs <paramref name="test"/> with a copy of the host, beside which <paramref name="file"/> holds
    /// <paramref name="content"/>: for the files the host reads from beside itself whatever its environment says.</summary>
    private static async Task WithHostCopyAsync(string file, string content, CancellationToken cancellationToken, Func<string, Task> test)
    {
        string directory = Path.Combine(Path.GetTempPath(), $"ProgramTests{Guid.NewGuid():N}");
        Directory.CreateDirectory(directory);
        try
        {
            // The program, its dependencies and its settings: the files of the output folder, not its culture folders.
            foreach (string original in Directory.EnumerateFiles(AppContext.BaseDirectory))
            {
                File.Copy(original, Path.Combine(directory, Path.GetFileName(original)));
            }

            await File.WriteAllTextAsync(Path.Combine(directory, file), content, cancellationToken);
            await test(directory);
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }

    /// <summary>Reads stdout up to the host's "&lt;server&gt; listening on &lt;endpoint&gt;" line.</summary>
    /// <param name="host">The host's process.</param>
    /// <param name="server">How the host names the server: "tcp echo", "udp echo" or "resp".</param>
    /// <param name="cancellationToken">Ends the wait.</param>
    private static async Task<IPEndPoint> ReadListeningEndPointAsync(Process host, string server, CancellationToken cancellationToken)
    {
        string prefix = $"{server} listening on ";
        while (await host.StandardOutput.ReadLineAsync(cancellationToken) is { } line)
        {
            if (line.StartsWith(prefix, StringComparison.Ordinal))
            {
                return IPEndPoint.Parse(line[prefix.Length..]);
            }
        }

        Assert.Fail($"the host ended without printing '{prefix}'; stderr: {await host.StandardError.ReadToEndAsync(cancellationToken)}");
        throw new UnreachableException();
    }
}
