using System.Net;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Testing;
using Microsoft.Extensions.Options;
using PoolLib;

namespace SocketServers.Tests;

/// <summary>The pooled TCP client in a container: registered with <see cref="TcpClientPoolServiceCollectionExtensions"/>,
/// configured from configuration, logging through the container's loggers, disposed with the container.</summary>
public sealed class TcpClientPoolServiceCollectionExtensionsTests
{
    [Test]
    [CancelAfter(30_000)]
    public async Task AddTcpClientPool_FromConfiguration_PoolConnectsWhereItSaysAndLogsThroughTheContainer(CancellationToken cancellationToken)
    {
        await using var redis = await RedisServerProcess.StartAsync(cancellationToken);
        IConfiguration configuration = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?>
            {
                ["Redis:EndPoint"] = redis.EndPoint.ToString(),
                ["Redis:Pool:MaxCapacity"] = "3",
                ["Redis:Pool:CreateTimeout"] = "00:00:05",
            })
            .Build();
        var services = new ServiceCollection();
        services.AddLogging(logging => logging.SetMinimumLevel(LogLevel.Debug).AddFakeLogging());
        services.AddTcpClientPool(configuration.GetSection("Redis"));
        TcpClientPool pool;
        await using (ServiceProvider provider = services.BuildServiceProvider())
        {
            pool = provider.GetRequiredService<TcpClientPool>();
            using (PoolSlot<TcpClientConnection> slot = await pool.TakeSlotAsync(cancellationToken))
            {
                Assert.That(await Resp.CallAsync(slot.Object, cancellationToken, "PING"), Is.EqualTo("+PONG"));
            }

            Assert.That((pool.EndPoint, pool.MaxCapacity, pool.Name), Is.EqualTo(((EndPoint)redis.EndPoint, 3, $"tcp-client@{redis.EndPoint}")));
            string[] messages = [.. provider.GetFakeLogCollector().GetSnapshot().Where(record => record.Category == typeof(TcpClientPool).FullName).Select(record => record.Message)];
            Assert.That(messages, Has.Exactly(1).StartWith($"TCP client connection 1 to {redis.EndPoint} opened from 127.0.0.1:"));
        }

        Assert.That(async () => await pool.TakeSlotAsync(cancellationToken), Throws.InstanceOf<ObjectDisposedException>(), "the container disposed the pool");
    }

    [Test]
    public async Task AddTcpClientPool_CalledTwice_OnePoolWithBothCallsOptions()
    {
        var services = new ServiceCollection();
        services.AddTcpClientPool(options => options.EndPoint = new DnsEndPoint("localhost", 6379));
        services.AddTcpClientPool(options => options.Pool = new PoolOptions { MaxCapacity = 7, Name = "cache" });
        await using ServiceProvider provider = services.BuildServiceProvider();

        TcpClientPool pool = provider.GetRequiredService<TcpClientPool>();

        Assert.That(provider.GetServices<TcpClientPool>(), Is.EqualTo(new[] { pool }));
        Assert.That((pool.EndPoint, pool.MaxCapacity, pool.Name, pool.TotalCount), Is.EqualTo(((EndPoint)new DnsEndPoint("localhost", 6379), 7, "cache", 0)));
    }

    [TestCase("Redis:Pool:MaxCapacity", "0", "'Redis:Pool:MaxCapacity' = '0'")]
    [TestCase("Redis:KeepAliveTme", "00:01:00", "'Redis:KeepAliveTme' is not a setting of TcpClientPoolOptions")]
    [TestCase("Redis:Pool:MaxCapacity", "4", "TcpClientPoolOptions.EndPoint is required")]
    public async Task AddTcpClientPool_InvalidConfiguration_ResolveThrowsNamingTheKey(string key, string value, string expected)
    {
        IConfiguration configuration = new ConfigurationBuilder().AddInMemoryCollection(new Dictionary<string, string?> { [key] = value }).Build();
        var services = new ServiceCollection();
        services.AddTcpClientPool(configuration.GetSection("Redis"));
        await using ServiceProvider provider = services.BuildServiceProvider();

        Assert.That(() => provider.GetRequiredService<TcpClientPool>(), Throws.InstanceOf<OptionsValidationException>().With.Message.Contains(expected));
    }

    [Test]
    public void AddTcpClientPool_NullArguments_Throw()
    {
        var services = new ServiceCollection();

        Assert.Multiple(() =>
        {
            Assert.That(() => ((IServiceCollection)null!).AddTcpClientPool(options => { }), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("services"));
            Assert.That(() => services.AddTcpClientPool((Action<TcpClientPoolOptions>)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("configure"));
            Assert.That(() => services.AddTcpClientPool((IConfiguration)null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("configuration"));
        });
    }
}
