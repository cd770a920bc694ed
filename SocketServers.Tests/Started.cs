namespace SocketServers.Tests;

/// <summary>Starts a server for a test, disposing it if the start fails.</summary>
internal static class Started
{
    public static async Task<TServer> StartAsync<TServer>(TServer server, CancellationToken cancellationToken)
        where TServer : SocketServer
    {
        try
        {
            await server.StartAsync(cancellationToken);
            return server;
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }
    }
}
