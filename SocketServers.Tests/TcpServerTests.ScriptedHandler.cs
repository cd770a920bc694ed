using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Text;

namespace SocketServers.Tests;

public sealed partial class TcpServerTests
{
    /// <summary>A line protocol for the tests: most lines come back upper-cased; a few are commands.</summary>
    private sealed class ScriptedHandler : TcpConnectionHandler
    {
        public const int StreamChunkSize = 64 * 1024;

        public TaskCompletionSource PartialSeen { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource Waiting { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource Gate { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public TaskCompletionSource<int> Closed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Completed when a write the handler catches has failed.</summary>
        public TaskCompletionSource WriteFailed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Completed when an await of <see cref="TcpConnection.ConnectionClosed"/> ends: true if it was cancelled.</summary>
        public TaskCompletionSource<bool> CutOffSeen { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Completed, with <see cref="Handled"/>, when a write first waits for the kernel.</summary>
        public TaskCompletionSource<int> WriteBlocked { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        /// <summary>Lines handled, on every connection.</summary>
        public int Handled => Volatile.Read(ref _handled);

        private int _handled;

        private static readonly byte[] s_chunk = Pattern(StreamChunkSize);

        public static byte[] Pattern(int size) => [.. Enumerable.Range(0, size).Select(i => (byte)('a' + (i % 26)))];

        public override ValueTask OnConnectedAsync(TcpConnection connection)
        {
            connection.State = new StrongBox<int>();
            return default;
        }

        public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            int consumed = 0;
            while (data.Span[consumed..].IndexOf((byte)'\n') is var end and >= 0)
            {
                int start = consumed;
                string line = Encoding.ASCII.GetString(data.Span.Slice(consumed, end));
                consumed += end + 1;
                ((StrongBox<int>)connection.State!).Value++;
                Interlocked.Increment(ref _handled);
                switch (line.Split(' '))
                {
                    case ["count"]:
                        await connection.WriteAsync(Encoding.ASCII.GetBytes($"{((StrongBox<int>)connection.State!).Value}\n"));
                        break;
                    case ["peer"]:
                        await connection.WriteAsync(Encoding.ASCII.GetBytes($"{connection.RemoteEndPoint}\n"));
                        break;
                    case ["big", var size]:
                        ValueTask write = connection.WriteAsync(Pattern(int.Parse(size, System.Globalization.CultureInfo.InvariantCulture)));
                        if (!write.IsCompleted)
                        {
                            WriteBlocked.TrySetResult(Handled);
                        }

                        await write;
                        await connection.WriteAsync("\n"u8.ToArray());
                        break;
                    case ["big", var size, "catching"]:
                        // As a handler that catches its write's failure and then has work to finish (until the gate) would.
                        try
                        {
                            ValueTask bigWrite = connection.WriteAsync(Pattern(int.Parse(size, System.Globalization.CultureInfo.InvariantCulture)));
                            if (!bigWrite.IsCompleted)
                            {
                                WriteBlocked.TrySetResult(Handled);
                            }

                            await bigWrite;
                        }
                        catch (IOException)
                        {
                            WriteFailed.TrySetResult();
                            await Gate.Task;
                        }

                        break;
                    case ["stream", var chunks]:
                        for (int chunk = int.Parse(chunks, System.Globalization.CultureInfo.InvariantCulture); chunk > 0; chunk--)
                        {
                            await connection.WriteAsync(s_chunk);
                        }

                        await connection.WriteAsync("\n"u8.ToArray());
                        break;
                    case ["wait", "then", "write", var bytes]:
                        // One write of it all, after work that outlasts any timeout the test sets.
                        Waiting.TrySetResult();
                        await Gate.Task;
                        await connection.WriteAsync(Pattern(int.Parse(bytes, System.Globalization.CultureInfo.InvariantCulture)));
                        await connection.WriteAsync("\n"u8.ToArray());
                        break;
                    case ["wait", "then", "write", var bytes, "catching"]:
                        // As a handler that handles its own write failures and goes on would.
                        Waiting.TrySetResult();
                        await Gate.Task;
                        try
                        {
                            await connection.WriteAsync(Pattern(int.Parse(bytes, System.Globalization.CultureInfo.InvariantCulture)));
                        }
                        catch (IOException)
                        {
                            WriteFailed.TrySetResult();
                        }

                        break;
                    case ["wait"]:
                        Waiting.TrySetResult();
                        await Gate.Task;
                        await connection.WriteAsync("done\n"u8.ToArray());
                        break;
                    case ["await", "closed", "then", "throw"]:
                        // As a handler passing the token to its own work would see it end.
                        Waiting.TrySetResult();
                        await Task.Delay(Timeout.Infinite, connection.ConnectionClosed);
                        break;
                    case ["await", "closed"]:
                        Waiting.TrySetResult();
                        await Task.Delay(Timeout.Infinite, connection.ConnectionClosed).ContinueWith(
                            task => CutOffSeen.TrySetResult(task.IsCanceled), TaskScheduler.Default);
                        break;
                    case ["bye"]:
                        await connection.WriteAsync("bye\n"u8.ToArray());
                        connection.Close();
                        return data.Length;
                    case ["throw"]:
                        throw new InvalidOperationException("the script says so");
                    case ["throw", "disposed"]:
                        // The handler's own object, not the connection's.
                        throw new ObjectDisposedException("the handler's stream");
                    case ["throw", "reset"]:
                        // As the handler's own call to a backend that reset it would.
                        throw new IOException("the backend reset", new SocketException((int)SocketError.ConnectionReset));
                    case ["say", _]:
                        // The rest of the line and its newline, written from the bytes received.
                        await connection.WriteAsync(data.Slice(start + 4, end - 3));
                        break;
                    default:
                        await connection.WriteAsync(Encoding.ASCII.GetBytes(line.ToUpperInvariant() + "\n"));
                        break;
                }
            }

            if (consumed < data.Length)
            {
                PartialSeen.TrySetResult();
            }

            return consumed;
        }

        public override ValueTask OnInputEndedAsync(TcpConnection connection, ReadOnlyMemory<byte> unconsumed)
            => unconsumed.Span.StartsWith("say "u8)
                ? connection.WriteAsync(unconsumed[4..])
                : connection.WriteAsync(Encoding.ASCII.GetBytes($"unfinished: {Encoding.ASCII.GetString(unconsumed.Span)}\n"));

        public override void OnClosed(TcpConnection connection)
            => Closed.TrySetResult(((StrongBox<int>)connection.State!).Value);
    }
}
