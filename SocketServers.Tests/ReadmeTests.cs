using System.Net;
using System.Net.Sockets;
using System.Text;
using Samples;

namespace SocketServers.Tests;

// The handlers SocketServers/README.md shows under "Your own protocol" are Samples/UppercaseHandler.cs and
// Samples/LookupDatagramHandler.cs, run here.
public sealed class ReadmeTests
{
    [Test]
    public void Readme_YourOwnProtocol_ShowsTheSampleHandlerAsCompiled()
    {
        string readme = File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "SocketServers.README.md"));
        string sample = File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "Samples", "UppercaseHandler.cs.txt"));

        Assert.That(readme, Does.Contain("## Your own protocol"));
        Assert.That(readme, Does.Contain("```csharp\n" + sample + "```"));
        Assert.That(sample.TrimEnd('\n').Split('\n'), Has.Length.LessThanOrEqualTo(40), "lines");
    }

    [Test]
    public void Readme_DeferredUdpReply_ShowsTheSampleHandlerAsCompiled()
    {
        string readme = File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "SocketServers.README.md"));
        string sample = File.ReadAllText(Path.Combine(AppContext.BaseDirectory, "Samples", "LookupDatagramHandler.cs.txt"));

        Assert.That(readme, Does.Contain("```csharp\n" + sample + "```"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task LookupDatagramHandler_LookupAwaits_ReplyIsWhatItWrote(CancellationToken cancellationToken)
    {
        var lookedUp = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var handler = new LookupDatagramHandler(async (question, answer) =>
        {
            await lookedUp.Task;
            return Encoding.ASCII.GetBytes($"{question.Length} bytes asked", answer.Span);
        });
        var options = new UdpServerOptions { Address = IPAddress.Loopback, Port = 0, ConcurrentReceives = 1 };
        await using var server = await Started.StartAsync(new UdpServer(options, handler), cancellationToken);
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Dgram, ProtocolType.Udp);
        client.Bind(new IPEndPoint(IPAddress.Loopback, 0));

        await client.SendToAsync("who?"u8.ToArray(), SocketFlags.None, server.LocalEndPoint!, cancellationToken);
        lookedUp.SetResult();
        byte[] reply = new byte[64];
        int received = await client.ReceiveAsync(reply, SocketFlags.None, cancellationToken);

        Assert.That(Encoding.ASCII.GetString(reply, 0, received), Is.EqualTo("4 bytes asked"));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task UppercaseHandler_LinesThenQuit_NumberedUpperCaseRepliesThenEnd(CancellationToken cancellationToken)
    {
        var options = new TcpServerOptions { Address = IPAddress.Loopback, Port = 0 };
        await using var server = new TcpServer(options, new UppercaseHandler());
        await server.StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("hello\nwor", cancellationToken);
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("1: HELLO"));
        await client.SendAsync("ld\nquit\nignored\n", cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("2: WORLD\n"));
    }
}
