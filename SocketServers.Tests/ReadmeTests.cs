using Samples;

namespace SocketServers.Tests;

// The handler SocketServers/README.md shows under "Your own protocol" is Samples/UppercaseHandler.cs, run here.
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
    [CancelAfter(10_000)]
    public async Task UppercaseHandler_LinesThenQuit_NumberedUpperCaseRepliesThenEnd(CancellationToken cancellationToken)
    {
        var options = new TcpServerOptions { Address = System.Net.IPAddress.Loopback, Port = 0 };
        await using var server = new TcpServer(options, new UppercaseHandler());
        await server.StartAsync(cancellationToken);
        using LineClient client = await LineClient.ConnectAsync(server.LocalEndPoint!, cancellationToken);

        await client.SendAsync("hello\nwor", cancellationToken);
        Assert.That(await client.ReadLineAsync(cancellationToken), Is.EqualTo("1: HELLO"));
        await client.SendAsync("ld\nquit\nignored\n", cancellationToken);

        Assert.That(await client.ReadToEndAsync(cancellationToken), Is.EqualTo("2: WORLD\n"));
    }
}
