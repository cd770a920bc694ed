using System.Net;
using System.Net.Sockets;
using System.Text;

namespace SocketServers.Tests;

/// <summary>A TCP client for the tests: sends text, reads lines, exact byte counts and end of stream.</summary>
internal sealed class LineClient : IDisposable
{
    private readonly byte[] _buffer = new byte[64 * 1024];
    private int _start;
    private int _end;

    private LineClient(Socket socket) => Socket = socket;

    public Socket Socket { get; }

    /// <param name="receiveBufferSize">The kernel receive buffer to fix (which stops it growing); null for the system's.</param>
    public static async Task<LineClient> ConnectAsync(IPEndPoint endPoint, CancellationToken cancellationToken, int? receiveBufferSize = null)
    {
        var socket = new Socket(endPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        if (receiveBufferSize is int size)
        {
            socket.ReceiveBufferSize = size;
        }

        try
        {
            await socket.ConnectAsync(endPoint, cancellationToken);
            return new LineClient(socket);
        }
        catch
        {
            socket.Dispose();
            throw;
        }
    }

    public Task SendAsync(string text, CancellationToken cancellationToken) => SendAsync(Encoding.ASCII.GetBytes(text), cancellationToken);

    public async Task SendAsync(ReadOnlyMemory<byte> data, CancellationToken cancellationToken)
    {
        while (!data.IsEmpty)
        {
            data = data[await Socket.SendAsync(data, SocketFlags.None, cancellationToken)..];
        }
    }

    /// <summary>Reads up to and without the next '\n'; <see langword="null"/> at end of stream.</summary>
    public async Task<string?> ReadLineAsync(CancellationToken cancellationToken)
    {
        while (true)
        {
            int newline = _buffer.AsSpan(_start, _end - _start).IndexOf((byte)'\n');
            if (newline >= 0)
            {
                string line = Encoding.ASCII.GetString(_buffer, _start, newline);
                _start += newline + 1;
                return line;
            }

            if (!await FillAsync(cancellationToken))
            {
                return null;
            }
        }
    }

    /// <summary>Reads exactly <paramref name="count"/> bytes.</summary>
    public async Task<byte[]> ReadExactlyAsync(int count, CancellationToken cancellationToken)
    {
        var result = new byte[count];
        int read = 0;
        while (read < count)
        {
            if (_end == _start && !await FillAsync(cancellationToken))
            {
                throw new EndOfStreamException($"the stream ended after {read} of {count} bytes");
            }

            int take = Math.Min(count - read, _end - _start);
            _buffer.AsSpan(_start, take).CopyTo(result.AsSpan(read));
            _start += take;
            read += take;
        }

        return result;
    }

    /// <summary>Reads everything up to the server's end of stream.</summary>
    public async Task<string> ReadToEndAsync(CancellationToken cancellationToken)
    {
        var text = new StringBuilder();
        do
        {
            text.Append(Encoding.ASCII.GetString(_buffer, _start, _end - _start));
            _start = _end;
        }
        while (await FillAsync(cancellationToken));

        return text.ToString();
    }

    public void Dispose() => Socket.Dispose();

    private async Task<bool> FillAsync(CancellationToken cancellationToken)
    {
        if (_start == _end)
        {
            _start = _end = 0;
        }
        else if (_end == _buffer.Length)
        {
            _buffer.AsSpan(_start, _end - _start).CopyTo(_buffer);
            _end -= _start;
            _start = 0;
        }

        int received = await Socket.ReceiveAsync(_buffer.AsMemory(_end), SocketFlags.None, cancellationToken);
        _end += received;
        return received > 0;
    }
}
