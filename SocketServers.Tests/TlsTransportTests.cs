using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using PoolLib;
using PoolLib.Tests;
using SocketServers.Internal;

namespace SocketServers.Tests;

// A connection over an SslStream the test authenticates, run by the connection's own loop: the handler sees plaintext,
// an idle connection holds no pooled buffer, a reply the client does not read holds the handler's write, and a close
// ends the stream with close_notify.
public sealed class TlsTransportTests
{
    private const int BufferSize = 4096;

    private static readonly Lazy<X509Certificate2> s_certificate = new(() => TestCertificates.Create());

    [Test]
    [CancelAfter(20_000)]
    public async Task Connection_LinesOverTls_EchoedAndTheClientsCloseIsGraceful(CancellationToken cancellationToken)
    {
        await using var test = await TlsConnection.StartAsync(SslProtocols.None, cancellationToken);

        string echoed = await test.ExchangeAsync("hello\nworld\n", 12, cancellationToken);
        await test.Client.ShutdownAsync();
        test.ClientSocket.Shutdown(SocketShutdown.Send);
        await test.Closed.Task.WaitAsync(cancellationToken);

        Assert.That(echoed, Is.EqualTo("hello\nworld\n"));
        Assert.That(test.Owner.Count.Snapshot(null).Drops, Is.Zero, "the client's close_notify and end of stream close it gracefully");
    }

    // SslStream has no gather: the buffered head is written, then the owned body, in order.
    [Test]
    [CancelAfter(20_000)]
    public async Task WriteOwnedAsync_AfterABufferedHead_BothArriveInOrder(CancellationToken cancellationToken)
    {
        await using var test = await TlsConnection.StartAsync(SslProtocols.None, cancellationToken);

        string reply = await test.ExchangeAsync("owned\n", 6 + ScriptHandler.OwnedBody.Length, cancellationToken);

        Assert.That(reply, Is.EqualTo("owned:" + Encoding.ASCII.GetString(ScriptHandler.OwnedBody)));
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Connection_IdleAfterAReply_HoldsNoPooledBufferAndServesTheNextLine(CancellationToken cancellationToken)
    {
        await using var test = await TlsConnection.StartAsync(SslProtocols.None, cancellationToken);
        await test.ExchangeAsync("one\n", 4, cancellationToken);

        // Parked on a zero-byte read of the stream, it holds neither a receive nor a send buffer.
        await Poll.UntilAsync(() => test.Owner.BuffersInUse == 0, cancellationToken);
        bool closedWhileIdle = test.Closed.Task.IsCompleted;
        await test.Client.WriteAsync("two\n"u8.ToArray(), cancellationToken);

        Assert.That(await test.ReadAsync(4, cancellationToken), Is.EqualTo("two\n"));
        Assert.That(closedWhileIdle, Is.False);
    }

    [Test]
    [CancelAfter(30_000)]
    public async Task WriteAsync_ClientDoesNotRead_WaitsHoldingOneSendBufferUntilItReads(CancellationToken cancellationToken)
    {
        await using var test = await TlsConnection.StartAsync(SslProtocols.None, cancellationToken);
        await test.Client.WriteAsync("big\n"u8.ToArray(), cancellationToken);

        // Far more than the kernel's buffers on both sides hold: the handler's write waits for the client to read.
        await Poll.UntilAsync(() => test.Connection.Activity.IsSending, cancellationToken);
        bool doneWhileUnread = test.Owner.Handler.BigReplySent.Task.IsCompleted;
        int sendBuffersWhileUnread = test.Owner.SendBuffersInUse;
        byte[] reply = new byte[ScriptHandler.BigReplyLength];
        await test.Client.ReadExactlyAsync(reply, cancellationToken);
        await test.Owner.Handler.BigReplySent.Task.WaitAsync(cancellationToken);

        Assert.That(doneWhileUnread, Is.False);
        Assert.That(sendBuffersWhileUnread, Is.LessThanOrEqualTo(1));
        Assert.That(reply, Is.All.EqualTo((byte)'x'));
    }

    // TLS 1.2, whose alerts travel as records of their own type: the last record before the end of stream is one.
    [Test]
    [CancelAfter(20_000)]
    public async Task Close_AfterTheReply_EndsTheStreamWithCloseNotify(CancellationToken cancellationToken)
    {
        await using var test = await TlsConnection.StartAsync(SslProtocols.Tls12, cancellationToken);

        string reply = await test.ExchangeAsync("close\n", 4, cancellationToken);
        int end = await test.Client.ReadAsync(new byte[16], cancellationToken);

        Assert.That(reply, Is.EqualTo("bye\n"));
        Assert.That(end, Is.Zero, "the end of the stream");
        Assert.That(test.Recorded.LastRecordType(), Is.EqualTo(21), "an alert record (close_notify) before the end of stream");
    }

    // The handler's close from another thread while the loop waits for the rest of a line: the wait on the TLS stream
    // is woken, the stream ends with close_notify, and the line's start is never handed over.
    [Test]
    [CancelAfter(20_000)]
    public async Task Close_FromAnotherThreadWhileHalfALineWaits_EndsTheStreamWithCloseNotify(CancellationToken cancellationToken)
    {
        await using var test = await TlsConnection.StartAsync(SslProtocols.Tls12, cancellationToken);
        await test.ExchangeAsync("one\nhal", 4, cancellationToken);

        test.Connection.Close();
        int end = await test.Client.ReadAsync(new byte[16], cancellationToken);
        test.ClientSocket.Shutdown(SocketShutdown.Send);
        await test.Closed.Task.WaitAsync(cancellationToken);

        Assert.That(end, Is.Zero, "the end of the stream");
        Assert.That(test.Recorded.LastRecordType(), Is.EqualTo(21), "an alert record (close_notify) before the end of stream");
        Assert.That(test.Owner.Count.Snapshot(null).Drops, Is.Zero, "the client closed within the linger");
    }

    /// <summary>A client and the server's connection over TLS on loopback, the connection's loop running.</summary>
    private sealed class TlsConnection : IAsyncDisposable
    {
        private readonly Socket _listener;
        private readonly SocketArgsPool _args = new(bufferSize: 0, maxCapacity: 1);

        private TlsConnection(Socket listener, Socket clientSocket, RecordingStream recorded)
        {
            _listener = listener;
            ClientSocket = clientSocket;
            Recorded = recorded;
            Client = new SslStream(recorded);
        }

        public Owner Owner { get; } = new();

        public Socket ClientSocket { get; }

        public RecordingStream Recorded { get; }

        public SslStream Client { get; }

        public SocketConnection Connection { get; private set; } = null!;

        public TaskCompletionSource Closed => Owner.Closed;

        public static async Task<TlsConnection> StartAsync(SslProtocols protocols, CancellationToken cancellationToken)
        {
            var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
            listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
            listener.Listen();
            Socket clientSocket = await SocketTestExtensions.ConnectTcpAsync((IPEndPoint)listener.LocalEndPoint!, cancellationToken);
            var test = new TlsConnection(listener, clientSocket, new RecordingStream(new NetworkStream(clientSocket)));
            Socket accepted = await listener.AcceptAsync(cancellationToken);
            var server = new SslStream(new NetworkStream(accepted));
            await Task.WhenAll(
                server.AuthenticateAsServerAsync(new SslServerAuthenticationOptions { ServerCertificate = s_certificate.Value, EnabledSslProtocols = protocols }, cancellationToken),
                test.Client.AuthenticateAsClientAsync(
                    new SslClientAuthenticationOptions
                    {
                        TargetHost = "localhost",
                        EnabledSslProtocols = protocols,
                        RemoteCertificateValidationCallback = (_, certificate, _, _) => certificate?.GetCertHashString() == s_certificate.Value.GetCertHashString(),
                    },
                    cancellationToken));
            PoolSlot<SocketAsyncEventArgs> slot = test._args.TakeSlot();
            test.Connection = new SocketConnection(test.Owner, slot, (PooledSocketArgs)slot.Object, accepted, id: 1, remoteEndPoint: null, server);
            test.Connection.Execute();
            return test;
        }

        /// <summary>Sends <paramref name="request"/>, then reads <paramref name="replyLength"/> bytes of reply.</summary>
        public async Task<string> ExchangeAsync(string request, int replyLength, CancellationToken cancellationToken)
        {
            await Client.WriteAsync(Encoding.ASCII.GetBytes(request), cancellationToken);
            return await ReadAsync(replyLength, cancellationToken);
        }

        /// <summary>Reads exactly <paramref name="length"/> bytes of plaintext.</summary>
        public async Task<string> ReadAsync(int length, CancellationToken cancellationToken)
        {
            byte[] buffer = new byte[length];
            await Client.ReadExactlyAsync(buffer, cancellationToken);
            return Encoding.ASCII.GetString(buffer);
        }

        public async ValueTask DisposeAsync()
        {
            ClientSocket.Dispose();
            await Closed.Task.WaitAsync(TimeSpan.FromSeconds(10));
            Client.Dispose();
            _listener.Dispose();
            _args.Dispose();
        }
    }

    /// <summary>The client's side of the socket, keeping every byte it reads, so that a test can look at the records.</summary>
    private sealed class RecordingStream(Stream inner) : Stream
    {
        private readonly MemoryStream _read = new();

        public override bool CanRead => true;

        public override bool CanSeek => false;

        public override bool CanWrite => true;

        public override long Length => throw new NotSupportedException();

        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

        /// <summary>The content type of the last whole TLS record read.</summary>
        public int LastRecordType()
        {
            byte[] bytes = _read.ToArray();
            int last = -1;
            for (int at = 0; at + 5 <= bytes.Length; at += 5 + ((bytes[at + 3] << 8) | bytes[at + 4]))
            {
                last = bytes[at];
            }

            return last;
        }

        public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
        {
            int read = await inner.ReadAsync(buffer, cancellationToken);
            _read.Write(buffer.Span[..read]);
            return read;
        }

        public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken)
            => ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

        public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer, offset, count, CancellationToken.None).GetAwaiter().GetResult();

        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) => inner.WriteAsync(buffer, cancellationToken);

        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) => inner.WriteAsync(buffer, offset, count, cancellationToken);

        public override void Write(byte[] buffer, int offset, int count) => inner.Write(buffer, offset, count);

        public override Task FlushAsync(CancellationToken cancellationToken) => inner.FlushAsync(cancellationToken);

        public override void Flush() => inner.Flush();

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                inner.Dispose();
            }

            base.Dispose(disposing);
        }
    }

    /// <summary>What the connection asks of its server: pools of its own, and a signal when it has closed.</summary>
    private sealed class Owner : ITcpConnectionOwner
    {
        private readonly Pool<byte[]> _buffers = PoolLib.Pool.Create(new PoolOptions { MaxCapacity = 1 }, () => new byte[BufferSize]);
        private readonly Pool<byte[]> _sendBuffers = PoolLib.Pool.Create(new PoolOptions { MaxCapacity = 1 }, () => new byte[BufferSize]);

        public ScriptHandler Handler { get; } = new();

        TcpConnectionHandler ITcpConnectionOwner.Handler => Handler;

        public ILogger Logger => NullLogger.Instance;

        public LiveCounters Count { get; } = new();

        public Pool<byte[]> Buffers => _buffers;

        public Pool<byte[]> SendBuffers => _sendBuffers;

        public LargeMessageBuffers LargeBuffers { get; } = new(BufferSize, BufferSize, budget: 0);

        public MillisecondClock Clock => MillisecondClock.System;

        public LogRateLimiter ConnectionWarnings { get; } = new();

        public TaskCompletionSource Closed { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public int SendBuffersInUse => _sendBuffers.TotalCount - _sendBuffers.AvailableCount;

        public int BuffersInUse => _buffers.TotalCount - _buffers.AvailableCount + SendBuffersInUse;

        public void OnHandlerFailed(Exception exception) => Closed.TrySetException(exception);

        public void OnMessageTooLarge(string reason)
        {
        }

        public void OnConnectionClosed(SocketConnection connection, TimeSpan duration) => Closed.TrySetResult();
    }

    /// <summary>Echoes each line; "big" writes <see cref="BigReplyLength"/> bytes; "close" says bye and closes.</summary>
    private sealed class ScriptHandler : TcpConnectionHandler
    {
        public const int BigReplyLength = 32 << 20;

        private static readonly byte[] s_chunk = Enumerable.Repeat((byte)'x', 64 * 1024).ToArray();

        /// <summary>What "owned" sends with <see cref="TcpConnection.WriteOwnedAsync"/>, after "owned:".</summary>
        public static byte[] OwnedBody { get; } = [.. Enumerable.Range(0, 3 * BufferSize).Select(i => (byte)('a' + (i % 26)))];

        public TaskCompletionSource BigReplySent { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public override async ValueTask<int> OnReceivedAsync(TcpConnection connection, ReadOnlyMemory<byte> data)
        {
            int consumed = 0;
            for (int end; (end = data.Span[consumed..].IndexOf((byte)'\n')) >= 0; consumed += end + 1)
            {
                ReadOnlyMemory<byte> line = data.Slice(consumed, end + 1);
                if (line.Span.SequenceEqual("big\n"u8))
                {
                    for (int sent = 0; sent < BigReplyLength; sent += s_chunk.Length)
                    {
                        await connection.WriteAsync(s_chunk);
                    }

                    BigReplySent.TrySetResult();
                }
                else if (line.Span.SequenceEqual("owned\n"u8))
                {
                    await connection.WriteAsync("owned:"u8.ToArray());
                    await connection.WriteOwnedAsync(OwnedBody);
                }
                else if (line.Span.SequenceEqual("close\n"u8))
                {
                    await connection.WriteAsync("bye\n"u8.ToArray());
                    connection.Close();
                }
                else
                {
                    await connection.WriteAsync(line);
                }
            }

            return consumed;
        }
    }
}
