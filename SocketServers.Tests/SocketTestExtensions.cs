using System.Net;
using System.Net.Sockets;

namespace SocketServers.Tests;

/// <summary>The few socket operations the server tests repeat: a bound UDP client, connect, send all, read exactly, read to the end.</summary>
internal static class SocketTestExtensions
{
    /// <summary>A UDP client bound to 127.0.0.1 on a free port, so that replies can come back to it.</summary>
    public static Socket BoundUdpClient()
    {
        var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        return client;
    }

    public static async Task<Socket> ConnectTcpAsync(IPEndPoint endPoint, CancellationToken cancellationToken)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        try
        {
            await socket.ConnectAsync(endPoint, cancellationToken);
            return socket;
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }

    public static async Task SendAllAsync(this Socket socket, ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        while (!data.IsEmpty)
        {
            int sent = await socket.SendAsync(data, SocketFlags.None, cancellationToken);
            data = data[sent..];
        }
    }

    /// <returns>How many bytes were read: <paramref name="buffer"/>'s length unless the stream ended first.</returns>
    public static async Task<int> ReceiveExactlyAsync(this Socket socket, Memory<byte> buffer, CancellationToken cancellationToken)
    {
        int total = 0;
        while (total < buffer.Length)
        {
            int received = await socket.ReceiveAsync(buffer[total..], SocketFlags.None, cancellationToken);
            if (received == 0)
            {
                break;
            }

            total += received;
        }

        return total;
    }

    /// <summary>Receives one datagram, of any size UDP carries, and returns its bytes.</summary>
    public static async Task<byte[]> ReceiveDatagramAsync(this Socket socket, CancellationToken cancellationToken)
    {
        byte[] buffer = new byte[ushort.MaxValue];
        int received = await socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken);
        return buffer[..received];
    }

    /// <summary>Reads until end of stream and returns everything read.</summary>
    public static async Task<byte[]> ReceiveToEndAsync(this Socket socket, CancellationToken cancellationToken)
    {
        using var all = new MemoryStream();
        var buffer = new byte[16 * 1024];
        int received;
        while ((received = await socket.ReceiveAsync(buffer, SocketFlags.None, cancellationToken)) > 0)
        {
            all.Write(buffer, 0, received);
        }

        return all.ToArray();
    }

    /// <summary>One round trip on a new connection, then a graceful close: proves the server still serves.</summary>
    public static async Task AssertEchoesAsync(IPEndPoint endPoint, int size, CancellationToken cancellationToken)
    {
        using Socket client = await ConnectTcpAsync(endPoint, cancellationToken);
        byte[] message = new byte[size];
        Random.Shared.NextBytes(message);
        byte[] echo = new byte[size];

        await client.SendAllAsync(message, cancellationToken);
        int received = await client.ReceiveExactlyAsync(echo, cancellationToken);
        client.Shutdown(SocketShutdown.Send);
        int after = await client.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken);

        Assert.That(received, Is.EqualTo(size));
        Assert.That(echo, Is.EqualTo(message));
        Assert.That(after, Is.Zero, "end of stream after the echo");
    }

    /// <summary>One round trip of a few bytes on an open connection, checked byte-exact.</summary>
    public static async Task AssertEchoOnAsync(this Socket client, CancellationToken cancellationToken)
    {
        byte[] message = [7, 8, 9];
        await client.SendAllAsync(message, cancellationToken);
        byte[] echo = new byte[message.Length];
        Assert.That(await client.ReceiveExactlyAsync(echo, cancellationToken), Is.EqualTo(message.Length));
        Assert.That(echo, Is.EqualTo(message));
    }

    /// <returns>What a read returns: 0 at end of stream, also when the server reset the connection.</returns>
    public static async Task<int> ReadEndAsync(this Socket client, CancellationToken cancellationToken)
    {
        try
        {
            return await client.ReceiveAsync(new byte[1], SocketFlags.None, cancellationToken);
        }
        catch (SocketException ex) when (ex.SocketErrorCode == SocketError.ConnectionReset)
        {
            return 0;
        }
    }

    /// <summary>Sends until a send fails, as one does once the server has reset the connection.</summary>
    /// <returns>The send's error.</returns>
    public static async Task<SocketError> SendUntilFailedAsync(this Socket client, CancellationToken cancellationToken)
    {
        byte[] chunk = new byte[16 * 1024];
        try
        {
            while (true)
            {
                await client.SendAsync(chunk, SocketFlags.None, cancellationToken);
            }
        }
        catch (SocketException ex)
        {
            return ex.SocketErrorCode;
        }
    }

    /// <summary>What <paramref name="operation"/> returns; the test fails, instead of waiting for its own time limit,
    /// if that takes longer than <see cref="UdpEchoTesting.EchoTimeout"/>: for what a broken server would never do.</summary>
    /// <param name="operation">The wait, given a token cancelled when the time is up.</param>
    /// <param name="what">What is waited for, for the failure's message.</param>
    /// <param name="cancellationToken">The test's own limit.</param>
    public static async Task<T> WithinAsync<T>(Func<CancellationToken, Task<T>> operation, string what, CancellationToken cancellationToken)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(UdpEchoTesting.EchoTimeout);
        try
        {
            return await operation(timeout.Token);
        }
        catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
        {
            Assert.Fail($"not within {UdpEchoTesting.EchoTimeout.TotalSeconds} s: {what}");
            throw;
        }
    }

    /// <summary>As <see cref="WithinAsync{T}"/>, for a wait with no result.</summary>
    public static Task WithinAsync(Func<CancellationToken, Task> operation, string what, CancellationToken cancellationToken)
        => WithinAsync(
            async token =>
            {
                await operation(token);
                return true;
            },
            what,
            cancellationToken);
}
