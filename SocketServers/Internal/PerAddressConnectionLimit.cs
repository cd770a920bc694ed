using System.Collections.Concurrent;
using System.Net;

namespace SocketServers.Internal;

/// <summary>
/// <see cref="TcpServerOptions.MaxConnectionsPerAddress"/>: how many connections each client address has open, and
/// whether one more may open.
/// </summary>
/// <remarks>Lock-free: each address's count moves by compare-and-swap on a concurrent dictionary, so a claim never
/// passes the limit, and an address is forgotten when its last connection closes. With no limit it counts nothing.</remarks>
internal sealed class PerAddressConnectionLimit
{
    // Open connections per client address; only while there is a limit. An entry is never 0: it is removed instead.
    private readonly ConcurrentDictionary<IPAddress, int> _connectionsPerAddress = new();
    private readonly int _maxConnectionsPerAddress;

    /// <summary>Creates the limit.</summary>
    /// <param name="maxConnectionsPerAddress">The most connections one address may have open at once; 0 for no limit.</param>
    public PerAddressConnectionLimit(int maxConnectionsPerAddress) => _maxConnectionsPerAddress = maxConnectionsPerAddress;

    /// <summary>Counts one more connection from <paramref name="address"/>.</summary>
    /// <param name="address">The client's address; <see langword="null"/> when it could not be read, which is never limited.</param>
    /// <returns><see langword="false"/>, counting nothing, if the connection would pass the limit.</returns>
    public bool TryClaim(IPAddress? address)
    {
        if (_maxConnectionsPerAddress == 0 || address is null)
        {
            return true;
        }

        while (true)
        {
            int open = _connectionsPerAddress.GetValueOrDefault(address);
            if (open >= _maxConnectionsPerAddress)
            {
                return false;
            }

            if (open == 0 ? _connectionsPerAddress.TryAdd(address, 1) : _connectionsPerAddress.TryUpdate(address, open + 1, open))
            {
                return true;
            }
        }
    }

    /// <summary>Counts one connection fewer from <paramref name="address"/>, forgetting the address at zero; for a
    /// connection that <see cref="TryClaim"/> let open.</summary>
    /// <param name="address">The client's address, as given to <see cref="TryClaim"/>.</param>
    public void Release(IPAddress? address)
    {
        if (_maxConnectionsPerAddress == 0 || address is null)
        {
            return;
        }

        while (true)
        {
            int open = _connectionsPerAddress[address];
            if (open == 1 ? _connectionsPerAddress.TryRemove(KeyValuePair.Create(address, 1)) : _connectionsPerAddress.TryUpdate(address, open - 1, open))
            {
                return;
            }
        }
    }
}
