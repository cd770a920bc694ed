using System.Net.Sockets;
using System.Threading.Tasks.Sources;

namespace SocketServers.Internal;

/// <summary>
/// A <see cref="SocketAsyncEventArgs"/> that is its own <see cref="IValueTaskSource{TResult}"/>, so that awaiting an
/// operation on it allocates nothing: before each operation the subclass calls <see cref="ResetSource"/>; when the socket
/// call goes pending it hands out a <see cref="ValueTask"/> over this object and <see cref="Version"/>, and completes it
/// from <see cref="SocketAsyncEventArgs.OnCompleted"/> with <see cref="SetResult"/> or <see cref="SetException"/>. One
/// operation at a time, as <see cref="SocketAsyncEventArgs"/> requires anyway.
/// </summary>
internal abstract class AwaitableSocketArgs : SocketAsyncEventArgs, IValueTaskSource<int>, IValueTaskSource
{
    // Reset before each operation; completed once when that operation went pending.
    private ManualResetValueTaskSourceCore<int> _source;

    protected AwaitableSocketArgs()
        : base(unsafeSuppressExecutionContextFlow: true)
    {
    }

    /// <summary>Gets the version the awaitable of the operation being started carries.</summary>
    protected short Version => _source.Version;

    int IValueTaskSource<int>.GetResult(short token)
    {
        try
        {
            return _source.GetResult(token);
        }
        finally
        {
            OnOutcomeRead();
        }
    }

    void IValueTaskSource.GetResult(short token) => ((IValueTaskSource<int>)this).GetResult(token);

    ValueTaskSourceStatus IValueTaskSource<int>.GetStatus(short token) => _source.GetStatus(token);

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _source.GetStatus(token);

    void IValueTaskSource<int>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _source.OnCompleted(continuation, state, token, flags);

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags)
        => _source.OnCompleted(continuation, state, token, flags);

    /// <summary>Readies the source for the operation about to start.</summary>
    protected void ResetSource() => _source.Reset();

    /// <summary>Completes the pending operation with <paramref name="result"/>.</summary>
    protected void SetResult(int result) => _source.SetResult(result);

    /// <summary>Completes the pending operation with <paramref name="exception"/>.</summary>
    protected void SetException(Exception exception) => _source.SetException(exception);

    /// <summary>Called once the awaiter has read the outcome of an operation that went pending.</summary>
    protected virtual void OnOutcomeRead()
    {
    }
}
