using System.Diagnostics;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using Microsoft.Extensions.Logging;
using PoolLib;

namespace SocketServers.Internal;

/// <summary>
/// What runs between a TCP accept and the connection's start: the PROXY header from a trusted proxy, then the TLS
/// handshake, both within <see cref="TcpServerOptions.HandshakeTimeout"/> of the accept. The connection holds its pooled
/// slot throughout; with TLS, it also holds one of <see cref="TlsOptions.MaxHandshakesInFlight"/> rooms, which the accept
/// loop takes before it accepts, so that clients over the cap wait in the backlog.
/// </summary>
internal sealed class ConnectionPreamble : IDisposable
{
    private readonly SocketServer _server;
    private readonly IConnectionPreambleOwner _owner;
    private readonly ILogger _logger;
    private readonly IPNetwork[] _trusted;
    private readonly TlsHandshake? _tls;
    private readonly TimeSpan _timeout;

    // With TLS: the rooms for handshakes; null without, when the preamble is only a PROXY header, which costs no CPU.
    private readonly SemaphoreSlim? _rooms;
    private readonly int _maxRooms;

    // The accept loop's alone (its iterations run one at a time): whether it holds a room no preamble has taken yet.
    private bool _roomHeld;

    // Preambles under way, plus one until the accept loop has ended (WhenDoneAsync); who brings it to zero completes _done.
    private int _running = 1;
    private readonly TaskCompletionSource _done = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private ConnectionPreamble(SocketServer server, IConnectionPreambleOwner owner, ILogger logger, TcpServerOptions options)
    {
        _server = server;
        _owner = owner;
        _logger = logger;
        _trusted = [.. options.ProxyProtocolNetworks];
        _timeout = options.HandshakeTimeout;
        if (options.Tls.IsEnabled)
        {
            _tls = new TlsHandshake(options.Tls, logger);
            _maxRooms = options.Tls.MaxHandshakesInFlight;
            _rooms = new SemaphoreSlim(_maxRooms, _maxRooms);
        }
    }

    /// <summary>Gets the TLS handshake; <see langword="null"/> without TLS.</summary>
    public TlsHandshake? Tls => _tls;

    /// <summary>Gets how many handshakes hold a room now (0 without TLS).</summary>
    public int HandshakesInFlight => _rooms is null ? 0 : _maxRooms - _rooms.CurrentCount - (_roomHeld ? 1 : 0);

    /// <summary>Gets how many connections are in their preamble now, each holding a pooled slot.</summary>
    public int Running => Math.Max(0, Volatile.Read(ref _running) - 1);

    /// <summary>The preamble <paramref name="options"/> ask for; <see langword="null"/> when they ask for neither PROXY nor TLS.</summary>
    public static ConnectionPreamble? Create(SocketServer server, IConnectionPreambleOwner owner, ILogger logger, TcpServerOptions options)
        => options.ProxyProtocolNetworks.Count > 0 || options.Tls.IsEnabled ? new ConnectionPreamble(server, owner, logger, options) : null;

    /// <summary>Waits, before an accept, for a handshake room, unless the loop holds one already.</summary>
    /// <returns><see langword="false"/> once the server stops.</returns>
    public async ValueTask<bool> WaitForRoomAsync(CancellationToken stopping)
    {
        if (_rooms is null || _roomHeld)
        {
            return true;
        }

        try
        {
            await _rooms.WaitAsync(stopping).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return false;
        }

        _roomHeld = true;
        return true;
    }

    /// <summary>Gives back the room of an accept that started no preamble (it failed, or the client was rejected).</summary>
    public void ReturnUnusedRoom()
    {
        if (_roomHeld)
        {
            _roomHeld = false;
            _rooms!.Release();
        }
    }

    /// <summary>Runs the preamble of an accepted connection, then hands it to the owner; returns at once.</summary>
    public void Run(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, CancellationToken stopping)
    {
        bool room = _roomHeld;
        _roomHeld = false;
        Interlocked.Increment(ref _running);
        _ = RunAsync(slot, args, socket, room, stopping);
    }

    /// <summary>Called once, after the accept loop has ended: completes when no preamble is under way.</summary>
    public Task WhenDoneAsync()
    {
        LeaveRunning();
        return _done.Task;
    }

    /// <inheritdoc/>
    public void Dispose() => _tls?.Dispose();

    private async Task RunAsync(PoolSlot<SocketAsyncEventArgs> slot, PooledSocketArgs args, Socket socket, bool room, CancellationToken stopping)
    {
        // Off the accept loop's thread.
        await Task.CompletedTask.ConfigureAwait(ConfigureAwaitOptions.ForceYielding);
        using var deadline = CancellationTokenSource.CreateLinkedTokenSource(stopping);
        deadline.CancelAfter(_timeout);
        string stage = "proxy";
        EndPoint? peer = null;
        IPEndPoint? client;
        SslStream? tls;
        try
        {
            peer = socket.RemoteEndPoint;
            client = IsTrusted(peer) ? await ProxyHeaderReader.ReadAsync(socket, deadline.Token).ConfigureAwait(false) : null;
            stage = "tls";
            tls = _tls is null ? null : await HandshakeAsync(_tls, socket, deadline.Token, stopping).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            try
            {
                Fail(slot, socket, peer, stage, ex, stopping);
            }
            finally
            {
                Leave(room);
            }

            return;
        }

        // Outside the catch: the owner takes the slot from here on, even if it throws.
        try
        {
            _owner.OnPreambleDone(slot, args, socket, client, tls);
        }
        finally
        {
            Leave(room);
        }
    }

    /// <summary>Ends a preamble: gives back its handshake room, if it held one, and stops counting it.</summary>
    private void Leave(bool room)
    {
        if (room)
        {
            _rooms!.Release();
        }

        LeaveRunning();
    }

    private async Task<SslStream> HandshakeAsync(TlsHandshake handshake, Socket socket, CancellationToken cancellationToken, CancellationToken stopping)
    {
        long started = Stopwatch.GetTimestamp();
        SslStream tls;
        try
        {
            tls = await handshake.AuthenticateAsync(socket, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception ex) when (Reason(ex, stopping) is var reason && reason != "stopped")
        {
            SocketServerMetrics.TlsHandshake(_server, Stopwatch.GetElapsedTime(started), protocol: null, reason);
            throw;
        }

        SocketServerMetrics.TlsHandshake(_server, Stopwatch.GetElapsedTime(started), tls.SslProtocol, failure: null);
        return tls;
    }

    private void Fail(PoolSlot<SocketAsyncEventArgs> slot, Socket socket, EndPoint? peer, string stage, Exception exception, CancellationToken stopping)
    {
        try
        {
            string reason = Reason(exception, stopping);
            if (reason != "stopped")
            {
                SocketServerMetrics.HandshakeFailed(_server, stage, reason);
            }

            _logger.PreambleFailed(peer, stage, reason, reason == "error" ? exception : null);
        }
        finally
        {
            socket.Dispose();
            _owner.OnPreambleFailed(slot);
        }
    }

    // Why a preamble failed, as the failures metric names it.
    private static string Reason(Exception exception, CancellationToken stopping) => exception switch
    {
        OperationCanceledException => stopping.IsCancellationRequested ? "stopped" : "timeout",
        InvalidDataException => "malformed",
        AuthenticationException => "protocol",
        EndOfStreamException or IOException or SocketException or ObjectDisposedException => "client_closed",
        _ => "error",
    };

    private bool IsTrusted(EndPoint? peer)
    {
        if (_trusted.Length == 0 || peer is not IPEndPoint { Address: var address })
        {
            return false;
        }

        IPAddress mapped = address.IsIPv4MappedToIPv6 ? address.MapToIPv4() : address;
        foreach (IPNetwork network in _trusted)
        {
            if (network.Contains(address) || network.Contains(mapped))
            {
                return true;
            }
        }

        return false;
    }

    private void LeaveRunning()
    {
        if (Interlocked.Decrement(ref _running) == 0)
        {
            _done.TrySetResult();
        }
    }
}
