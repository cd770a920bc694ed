using System.Net;
using System.Net.Sockets;

namespace PoolBench.Connections;

/// <summary>
/// A TCP listener on 127.0.0.1 that drains its backlog slowly: a small backlog, and one accept a millisecond at most on a
/// thread of its own. Each accepted connection echoes what it receives, on a thread of its own too, so that nothing the
/// listener does runs on the thread pool whose threads the storm counts. Disposing closes the listener and every
/// connection it accepted.
/// </summary>
internal sealed class SlowListener : IDisposable
{
    private static readonly TimeSpan s_acceptInterval = TimeSpan.FromMilliseconds(1);
    private readonly Socket _listener = new(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
    private readonly List<Socket> _accepted = [];
    private readonly Thread _acceptor;
    private long _lastAccept = Environment.TickCount64;

    public SlowListener(int backlog)
    {
        _listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        _listener.Listen(backlog);
        EndPoint = (IPEndPoint)_listener.LocalEndPoint!;
        _acceptor = new Thread(Accept) { IsBackground = true, Name = "slow listener" };
        _acceptor.Start();
    }

    public IPEndPoint EndPoint { get; }

    /// <summary>The connections accepted so far.</summary>
    public int Accepted
    {
        get
        {
            lock (_accepted)
            {
                return _accepted.Count;
            }
        }
    }

    /// <summary>Waits until no connection has been accepted for <paramref name="quiet"/>: those still in the backlog are in.</summary>
    public async Task WaitQuietAsync(TimeSpan quiet)
    {
        while (Environment.TickCount64 - Volatile.Read(ref _lastAccept) < quiet.TotalMilliseconds)
        {
            await Task.Delay(quiet / 4).ConfigureAwait(false);
        }
    }

    public void Dispose()
    {
        _listener.Dispose();
        _acceptor.Join();
        lock (_accepted)
        {
            foreach (Socket socket in _accepted)
            {
                socket.Dispose();
            }
        }
    }

    private void Accept()
    {
        while (true)
        {
            Socket socket;
            try
            {
                socket = _listener.Accept();
            }
            catch (Exception e) when (e is SocketException or ObjectDisposedException)
            {
                // Disposed: the storm is over.
                return;
            }

            lock (_accepted)
            {
                _accepted.Add(socket);
            }

            Volatile.Write(ref _lastAccept, Environment.TickCount64);
            new Thread(() => Echo(socket)) { IsBackground = true, Name = "slow listener echo" }.Start();
            Thread.Sleep(s_acceptInterval);
        }
    }

    private static void Echo(Socket socket)
    {
        byte[] buffer = new byte[64];
        try
        {
            int received;
            while ((received = socket.Receive(buffer)) > 0)
            {
                socket.Send(buffer.AsSpan(0, received));
            }
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // Closed by the pool or by Dispose.
        }
    }
}
