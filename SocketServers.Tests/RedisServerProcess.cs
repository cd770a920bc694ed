using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace SocketServers.Tests;

/// <summary>
/// A real redis-server (Debian's redis-server package, which .ci/run installs) on 127.0.0.1 and a port of its own, for
/// one test: started, killed, started again on the same port, paused (SIGSTOP) and resumed as the test needs, and killed
/// when disposed, resumed first if paused. Nothing is saved to disk.
/// </summary>
internal sealed class RedisServerProcess : IAsyncDisposable
{
    private readonly string _program;
    private readonly StringBuilder _output = new();
    private Process? _process;
    private bool _paused;

    private RedisServerProcess(string program, int port)
    {
        _program = program;
        EndPoint = new IPEndPoint(IPAddress.Loopback, port);
    }

    public IPEndPoint EndPoint { get; }

    /// <summary>Starts a server on a free port and returns once it answers PING; inconclusive (under CI, failed) where
    /// redis-server is not installed.</summary>
    public static async Task<RedisServerProcess> StartAsync(CancellationToken cancellationToken)
    {
        var redis = new RedisServerProcess(InstalledTool.Find("redis-server", "redis-server"), FreePort());
        try
        {
            await redis.RestartAsync(cancellationToken);
            return redis;
        }
        catch
        {
            await redis.DisposeAsync();
            throw;
        }
    }

    /// <summary>A port nothing listens on, for a server that is down.</summary>
    public static int FreePort()
    {
        using var probe = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        probe.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        return ((IPEndPoint)probe.LocalEndPoint!).Port;
    }

    /// <summary>Starts the server (again, after <see cref="KillAsync"/>) on its port; returns once it answers PING.</summary>
    public async Task RestartAsync(CancellationToken cancellationToken)
    {
        Assert.That(_process, Is.Null, "the server is running");
        var start = new ProcessStartInfo(_program) { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string argument in (string[])["--port", EndPoint.Port.ToString(CultureInfo.InvariantCulture), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--loglevel", "warning"])
        {
            start.ArgumentList.Add(argument);
        }

        Process process = Process.Start(start)!;
        process.OutputDataReceived += (_, line) => Append(line.Data);
        process.ErrorDataReceived += (_, line) => Append(line.Data);
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        _process = process;
        while (true)
        {
            if (process.HasExited)
            {
                Assert.Fail($"redis-server on port {EndPoint.Port} exited with {process.ExitCode}: {Output}");
            }

            try
            {
                if (await CommandAsync(cancellationToken, "PING") == "+PONG")
                {
                    return;
                }
            }
            catch (SocketException)
            {
                // Not listening yet.
            }

            await Task.Delay(10, cancellationToken);
        }
    }

    /// <summary>Kills the server (SIGKILL) and waits until it is gone: its connections are closed by then.</summary>
    public async Task KillAsync(CancellationToken cancellationToken)
    {
        Process process = _process ?? throw new InvalidOperationException("the server is not running");
        process.Kill();
        await process.WaitForExitAsync(cancellationToken);
        process.Dispose();
        _process = null;
        _paused = false;
    }

    /// <summary>Stops the server process (SIGSTOP): it answers nothing, while the kernel still takes connections and bytes.</summary>
    public async Task PauseAsync(CancellationToken cancellationToken)
    {
        await SignalAsync("STOP", cancellationToken);
        _paused = true;
    }

    /// <summary>Lets a paused server go on (SIGCONT).</summary>
    public async Task ResumeAsync(CancellationToken cancellationToken)
    {
        await SignalAsync("CONT", cancellationToken);
        _paused = false;
    }

    /// <summary>Sends one command on a connection of its own and returns the reply (see <see cref="Resp.ReadReplyAsync"/>).</summary>
    public async Task<string> CommandAsync(CancellationToken cancellationToken, params string[] arguments)
    {
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(EndPoint, cancellationToken);
        await socket.SendAsync(Resp.Command(arguments), SocketFlags.None, cancellationToken);
        return await Resp.ReadReplyAsync((buffer, token) => socket.ReceiveAsync(buffer, SocketFlags.None, token), cancellationToken);
    }

    /// <summary>Gets how many clients the server has connected, not counting the one that asks.</summary>
    public async Task<int> ClientCountAsync(CancellationToken cancellationToken) =>
        (await CommandAsync(cancellationToken, "CLIENT", "LIST")).Split('\n', StringSplitOptions.RemoveEmptyEntries).Length - 1;

    public async ValueTask DisposeAsync()
    {
        if (_process is null)
        {
            return;
        }

        if (_paused)
        {
            await SignalAsync("CONT", CancellationToken.None);
        }

        _process.Kill();
        await _process.WaitForExitAsync();
        _process.Dispose();
        _process = null;
    }

    private string Output
    {
        get
        {
            lock (_output)
            {
                return _output.ToString();
            }
        }
    }

    private void Append(string? line)
    {
        if (line is not null)
        {
            lock (_output)
            {
                _output.AppendLine(line);
            }
        }
    }

    private async Task SignalAsync(string signal, CancellationToken cancellationToken)
    {
        Process process = _process ?? throw new InvalidOperationException("the server is not running");
        using Process kill = Process.Start("kill", [$"-{signal}", process.Id.ToString(CultureInfo.InvariantCulture)]);
        await kill.WaitForExitAsync(cancellationToken);
        Assert.That(kill.ExitCode, Is.Zero, $"kill -{signal}");
    }
}
