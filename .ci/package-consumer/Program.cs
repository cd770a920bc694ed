using System.Net.Sockets;
using System.Text;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.ObjectPool;
using PoolLib;
using SocketServers;

// Uses PoolLib and SocketServers through their packages, as a user's project would, and exits with 1
// if anything does not behave as the READMEs say.
var failures = new List<string>();
void Check(bool condition, string expectation)
{
    if (!condition)
    {
        failures.Add(expectation);
    }
}

// Pool.Create: the cap, the clean-up on release, and a release of a slot that is already back.
using (Pool<StringBuilder> builders = Pool.Create(2, () => new StringBuilder(), sb => sb.Clear()))
{
    PoolSlot<StringBuilder> first = builders.TakeSlot();
    first.Object.Append("used");
    PoolSlot<StringBuilder> second = builders.TakeSlot();
    Check(builders.TotalCount == 2, "two takes make two objects");
    Check(!builders.TryTakeSlot(out _), "a take at the cap does not wait and returns false");

    first.Dispose();
    builders.Release(second);
    Check(builders.AvailableCount == 2, "both objects are idle after their release");
    try
    {
        builders.Release(second);
        Check(false, "a second release throws");
    }
    catch (InvalidOperationException)
    {
    }

    using (PoolSlot<StringBuilder> again = await builders.TakeSlotAsync())
    {
        Check(again.Object.Length == 0, "the clean-up emptied the builder on release");
    }

    ObjectPool<StringBuilder> objects = builders.AsObjectPool();
    StringBuilder fromAdapter = objects.Get();
    Check(builders.AvailableCount == 1, "ObjectPool<T>.Get takes from the pool");
    objects.Return(fromAdapter);
    Check(builders.AvailableCount == 2, "ObjectPool<T>.Return releases to the pool");
}

// A subclass, pre-warmed from its constructor.
using (var buffers = new BufferPool(size: 16, maxCapacity: 4))
{
    Check(buffers.AvailableCount == 2 && buffers.TotalCount == 2, "the subclass pre-warmed two buffers");
    using (PoolSlot<byte[]> slot = buffers.TakeSlot())
    {
        Check(slot.Object.Length == 16, "the subclass made its buffer");
    }
}

// SocketServers: a server registered from a configuration section, without the Generic Host, echoes one
// message over TCP on a free port; bounded, so a hang fails.
using (var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30)))
{
    IConfigurationRoot configuration = new ConfigurationBuilder()
        .AddInMemoryCollection(new Dictionary<string, string?> { ["Echo:Tcp:Address"] = "127.0.0.1", ["Echo:Tcp:Port"] = "0" })
        .Build();
    await using ServiceProvider services = new ServiceCollection().AddTcpEchoServer(configuration.GetSection("Echo:Tcp")).BuildServiceProvider();
    TcpEchoServer server = services.GetRequiredService<TcpEchoServer>();
    await server.StartAsync(timeout.Token);
    byte[] message = Encoding.ASCII.GetBytes("ping");
    var echo = new byte[message.Length];
    using (var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp))
    {
        await client.ConnectAsync(server.LocalEndPoint!, timeout.Token);
        await client.SendAsync(message, SocketFlags.None, timeout.Token);
        int received = 0;
        while (received < echo.Length)
        {
            int read = await client.ReceiveAsync(echo.AsMemory(received), SocketFlags.None, timeout.Token);
            if (read == 0)
            {
                break;
            }

            received += read;
        }
    }

    Check(echo.AsSpan().SequenceEqual(message), "the TCP echo server sends the message back");
    await server.StopAsync(timeout.Token);
    Check(server.Counters.BytesSent == message.Length, "the server counted the bytes it echoed");
}

foreach (string failure in failures)
{
    Console.Error.WriteLine($"package consumer: expected that {failure}");
}

Console.WriteLine(failures.Count == 0 ? "package consumer: PoolLib and SocketServers work from their packages" : $"package consumer: {failures.Count} of the checks failed");
return failures.Count == 0 ? 0 : 1;
