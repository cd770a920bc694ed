using System.Buffers;
using System.IO.Pipelines;
using System.Net;
using System.Runtime.CompilerServices;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Connections;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace KestrelPeer;

/// <summary>
/// The server a .NET user would pick instead for raw TCP: Kestrel with an echo <see cref="ConnectionHandler"/>, on its
/// default socket transport, on a free port of 127.0.0.1. It prints <c>tcp echo listening on ADDRESS:PORT</c> and exits
/// when its standard input closes.
/// </summary>
public static class KestrelEchoPeer
{
    public static async Task<int> Main()
    {
        TextReader input = Console.In;
        TextWriter output = Console.Out;
        WebApplicationBuilder builder = WebApplication.CreateSlimBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.UseConnectionHandler<EchoHandler>()));
        WebApplication app = builder.Build();
        await using ConfiguredAsyncDisposable disposal = app.ConfigureAwait(false);
        await app.StartAsync().ConfigureAwait(false);
        string address = app.Services.GetRequiredService<Microsoft.AspNetCore.Hosting.Server.IServer>().Features
            .GetRequiredFeature<IServerAddressesFeature>().Addresses.First();
        var endPoint = new IPEndPoint(IPAddress.Loopback, new Uri(address).Port);
        await output.WriteLineAsync($"tcp echo listening on {endPoint}").ConfigureAwait(false);
        await output.FlushAsync().ConfigureAwait(false);

        // The parent keeps our standard input open while it wants us.
        await input.ReadToEndAsync().ConfigureAwait(false);
        await app.StopAsync().ConfigureAwait(false);
        return 0;
    }

    /// <summary>Writes back every segment read, then flushes once per read, as Kestrel's own echo samples do.</summary>
    private sealed class EchoHandler : ConnectionHandler
    {
        public override async Task OnConnectedAsync(ConnectionContext connection)
        {
            PipeReader input = connection.Transport.Input;
            PipeWriter output = connection.Transport.Output;
            while (true)
            {
                ReadResult result = await input.ReadAsync().ConfigureAwait(false);
                ReadOnlySequence<byte> buffer = result.Buffer;
                foreach (ReadOnlyMemory<byte> segment in buffer)
                {
                    output.Write(segment.Span);
                }

                input.AdvanceTo(buffer.End);
                FlushResult flushed = await output.FlushAsync().ConfigureAwait(false);
                if (result.IsCompleted || flushed.IsCompleted)
                {
                    break;
                }
            }
        }
    }
}
