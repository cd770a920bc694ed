using System.Runtime.ExceptionServices;

namespace PoolLib.Tests;

/// <summary>
/// A thread a test runs code on, whose exception is kept and rethrown on the test's thread by <see cref="Join"/>: left
/// unhandled on a thread of its own, it would crash the test host and lose every test's result.
/// </summary>
/// <remarks>
/// A background thread, so that one still blocked after its test failed never keeps the host alive. What it throws after
/// its test has given up on it (the test's own wait was cancelled first) is dropped with it.
/// </remarks>
internal sealed class TestThread
{
    private ExceptionDispatchInfo? _failure;

    private TestThread(Action body)
    {
        Thread = new Thread(() =>
        {
            try
            {
                body();
            }
            catch (Exception exception)
            {
                _failure = ExceptionDispatchInfo.Capture(exception);
            }
        })
        {
            IsBackground = true,
        };
    }

    /// <summary>Gets the thread, to interrupt it or to tell it apart.</summary>
    public Thread Thread { get; }

    /// <summary>Runs <paramref name="body"/> on a new thread.</summary>
    public static TestThread Start(Action body)
    {
        var thread = new TestThread(body);
        thread.Thread.Start();
        return thread;
    }

    /// <summary>Waits up to <paramref name="bound"/> for the thread to end, and then rethrows what it threw.</summary>
    /// <returns>False if it is still running; assert it, as a bounded wait's result.</returns>
    public bool Join(TimeSpan bound)
    {
        if (!Thread.Join(bound))
        {
            return false;
        }

        _failure?.Throw();
        return true;
    }
}
