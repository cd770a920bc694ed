using System.Text;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.ObjectPool;
using PoolLib.Internal;

namespace PoolLib.Tests;

// AddPool from configuration: every option bound by its name, strictly: a key that names no option, or a
// value that does not convert or is out of range, fails at registration with the key's path.
public sealed class PoolServiceCollectionExtensionsTests
{
    [Test]
    public void AddPool_ConfigurationSection_EveryOptionBound()
    {
        IConfiguration configuration = Configuration(new()
        {
            ["Pools:Builders:MaxCapacity"] = "8",
            ["Pools:Builders:Name"] = "builders",
            ["Pools:Builders:MinIdle"] = "2",
            ["Pools:Builders:IdleTimeout"] = "00:05:00",
            ["Pools:Builders:MaxObjectLifetime"] = "1.00:00:00",
            ["Pools:Builders:LeakDetectionThreshold"] = "00:00:30",
            ["Pools:Builders:LeakSamplingInterval"] = "16",
            ["Pools:Builders:abandonedRentalTimeout"] = "00:10:00",
        });
        var services = new ServiceCollection();

        services.AddPool(configuration.GetSection("Pools:Builders"), _ => new StringBuilder());

        using ServiceProvider provider = services.BuildServiceProvider();
        Pool<StringBuilder> pool = provider.GetRequiredService<Pool<StringBuilder>>();
        Assert.That(pool.Name, Is.EqualTo("builders"));
        Assert.That(pool.MaxCapacity, Is.EqualTo(8));
        Assert.That(provider.GetRequiredService<ObjectPool<StringBuilder>>(), Is.Not.Null);
        PoolOptions bound = PoolOptionsBinder.Bind(configuration.GetSection("Pools:Builders"), "section");
        Assert.That(
            (bound.MinIdle, bound.IdleTimeout, bound.MaxObjectLifetime, bound.LeakDetectionThreshold, bound.LeakSamplingInterval, bound.AbandonedRentalTimeout),
            Is.EqualTo((2, TimeSpan.FromMinutes(5), TimeSpan.FromDays(1), TimeSpan.FromSeconds(30), 16, TimeSpan.FromMinutes(10))));
    }

    [TestCase("MaxCapacty", "8", "'Pools:Builders:MaxCapacty' is not a setting of PoolOptions")]
    [TestCase("TimeProvider", "system", "'Pools:Builders:TimeProvider' is not a setting of PoolOptions")]
    [TestCase("MaxCapacity", "eight", "'Pools:Builders:MaxCapacity' = 'eight': expects a whole number")]
    [TestCase("IdleTimeout", "5 minutes", "'Pools:Builders:IdleTimeout' = '5 minutes': expects a time span")]
    [TestCase("IdleTimeout", "5", "'Pools:Builders:IdleTimeout' = '5': expects a time span")]
    [TestCase("IdleTimeout", "00:05", "'Pools:Builders:IdleTimeout' = '00:05': expects a time span")]
    [TestCase("MaxCapacity", "0", "'Pools:Builders:MaxCapacity' = '0'")]
    [TestCase("MinIdle", "9", "'Pools:Builders:MinIdle' = '9'")]
    [TestCase("LeakSamplingInterval", "-1", "'Pools:Builders:LeakSamplingInterval' = '-1'")]
    [TestCase("AbandonedRentalTimeout", "00:00:00", "'Pools:Builders:AbandonedRentalTimeout' = '00:00:00'")]
    public void AddPool_BadKeyOrValue_ThrowsAtRegistrationNamingTheKey(string key, string value, string message)
    {
        IConfiguration configuration = Configuration(new() { ["Pools:Builders:MaxCapacity"] = "4", [$"Pools:Builders:{key}"] = value });
        var services = new ServiceCollection();

        var exception = Assert.Throws<ArgumentException>(() => services.AddPool(configuration.GetSection("Pools:Builders"), _ => new StringBuilder()));

        Assert.That(exception!.Message, Does.StartWith(message));
        Assert.That(exception.ParamName, Is.EqualTo("section"));
        Assert.That(services, Is.Empty, "nothing registered");
    }

    [Test]
    public void AddPool_SectionWhereAValueBelongs_ThrowsNamingIt()
    {
        IConfiguration configuration = Configuration(new() { ["Pool:MaxCapacity:Value"] = "4" });

        var exception = Assert.Throws<ArgumentException>(() => new ServiceCollection().AddPool(configuration.GetSection("Pool"), _ => new StringBuilder()));

        Assert.That(exception!.Message, Does.StartWith("'Pool:MaxCapacity' is a section"));
    }

    [Test]
    public void AddPool_KeyUnderASettingThatAnotherSourceGivesAValue_ThrowsNamingIt()
    {
        IConfiguration configuration = new ConfigurationBuilder()
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Pool:MaxCapacity:Value"] = "4" })
            .AddInMemoryCollection(new Dictionary<string, string?> { ["Pool:MaxCapacity"] = "8" })
            .Build();

        var exception = Assert.Throws<ArgumentException>(() => new ServiceCollection().AddPool(configuration.GetSection("Pool"), _ => new StringBuilder()));

        Assert.That(exception!.Message, Does.StartWith("'Pool:MaxCapacity' is a section"));
    }

    [Test]
    public void AddPool_NullSectionOrFactory_Throws()
    {
        var services = new ServiceCollection();
        IConfiguration section = Configuration(new() { ["MaxCapacity"] = "1" });

        Assert.That(Assert.Throws<ArgumentNullException>(() => services.AddPool<StringBuilder>((IConfiguration)null!, _ => new StringBuilder()))!.ParamName, Is.EqualTo("section"));
        Assert.That(Assert.Throws<ArgumentNullException>(() => services.AddPool<StringBuilder>(section, null!))!.ParamName, Is.EqualTo("factory"));
    }

    private static IConfiguration Configuration(Dictionary<string, string?> values) =>
        new ConfigurationBuilder().AddInMemoryCollection(values).Build();
}
