using Microsoft.Extensions.Configuration;

namespace PoolLib.Tests;

// FromConfiguration, for a subclass's options: the same strict binding AddPool uses (PoolServiceCollectionExtensionsTests
// covers each key and bad value).
public sealed class PoolOptionsTests
{
    [Test]
    public void FromConfiguration_Section_EveryOptionItNamesSet()
    {
        IConfiguration section = Section(("MaxCapacity", "16"), ("Name", "redis"), ("CreateTimeout", "00:00:05"), ("MaxConcurrentCreations", "2"), ("FillMinIdle", "false"));

        PoolOptions options = PoolOptions.FromConfiguration(section);

        Assert.That((options.MaxCapacity, options.Name, options.CreateTimeout, options.MaxConcurrentCreations, options.FillMinIdle),
            Is.EqualTo((16, "redis", (TimeSpan?)TimeSpan.FromSeconds(5), 2, (bool?)false)));
        Assert.That(options.IdleTimeout, Is.Null, "a key not given keeps its default");
    }

    [Test]
    public void FromConfiguration_BadKey_ThrowsNamingItsPath()
    {
        var exception = Assert.Throws<ArgumentException>(() => PoolOptions.FromConfiguration(Section(("MaxCapacity", "4"), ("CreateTimout", "00:00:05"))));

        Assert.That(exception!.Message, Does.StartWith("'Clients:Redis:CreateTimout' is not a setting of PoolOptions"));
        Assert.That(exception.ParamName, Is.EqualTo("section"));
    }

    [Test]
    public void FromConfiguration_NullSection_Throws()
    {
        Assert.That(() => PoolOptions.FromConfiguration(null!), Throws.ArgumentNullException.With.Property("ParamName").EqualTo("section"));
    }

    private static IConfigurationSection Section(params (string Key, string Value)[] values) =>
        new ConfigurationBuilder()
            .AddInMemoryCollection(values.Select(pair => KeyValuePair.Create("Clients:Redis:" + pair.Key, (string?)pair.Value)))
            .Build()
            .GetSection("Clients:Redis");
}
