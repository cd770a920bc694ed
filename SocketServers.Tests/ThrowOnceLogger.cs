using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;

namespace SocketServers.Tests;

/// <summary>A logging provider that fails once, or a given number of times: every level is enabled, every line goes to
/// <see cref="Records"/>, except the first (or first few) that start with a given text, which throw instead.</summary>
internal sealed class ThrowOnceLogger(string linePrefix, int times = 1) : ILogger
{
    private int _thrown;

    public FakeLogger Records { get; } = new();

    public IDisposable? BeginScope<TState>(TState state)
        where TState : notnull => Records.BeginScope(state);

    public bool IsEnabled(LogLevel logLevel) => true;

    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
    {
        if (formatter(state, exception).StartsWith(linePrefix, StringComparison.Ordinal) && Interlocked.Increment(ref _thrown) <= times)
        {
            throw new InvalidOperationException($"injected logging fault on '{linePrefix}'");
        }

        Records.Log(logLevel, eventId, state, exception, formatter);
    }
}
