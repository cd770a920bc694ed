using NLog;
using NLog.Config;
using NLog.Targets;

namespace PoolLib.Tests.SocketServers;

/// <summary>Collects the servers' log lines at Info and above, as "LEVEL message exception-type", for as long as
/// it lives; the previous logging configuration comes back on dispose.</summary>
/// <remarks>Read <see cref="Lines"/> once the server is idle or stopped: the target is written under NLog's lock,
/// not read under it.</remarks>
internal sealed class LogCapture : IDisposable
{
    private readonly LoggingConfiguration? _previous;
    private readonly MemoryTarget _target = new()
    {
        Layout = "${level:uppercase=true} ${message}${onexception: ${exception:format=Type}}",
    };

    public LogCapture()
    {
        _previous = LogManager.Configuration;
        var configuration = new LoggingConfiguration();
        configuration.AddRule(NLog.LogLevel.Info, NLog.LogLevel.Fatal, _target, "SocketServers.*");
        LogManager.Configuration = configuration;
    }

    public IReadOnlyList<string> Lines => [.. _target.Logs];

    public void Dispose() => LogManager.Configuration = _previous;
}
