using System.Text;

namespace PoolLib.Tests;

// Pool.Create: a pool from a factory and a clean-up, without a subclass.
public sealed partial class PoolTests
{
    [Test]
    public void Create_Factory_MakesObjectsWithItWithinTheCap()
    {
        int made = 0;
        using Pool<StringBuilder> pool = Pool.Create(2, () => { made++; return new StringBuilder(); });

        PoolSlot<StringBuilder> first = pool.TakeSlot();
        PoolSlot<StringBuilder> second = pool.TakeSlot();
        bool third = pool.TryTakeSlot(out _);

        Assert.That(made, Is.EqualTo(2));
        Assert.That(third, Is.False);
        Assert.That(first.Object, Is.Not.SameAs(second.Object));
        Assert.That(pool.MaxCapacity, Is.EqualTo(2));
    }

    [Test]
    public void Create_CleanUp_RunsOnEveryRelease()
    {
        using Pool<StringBuilder> pool = Pool.Create(1, () => new StringBuilder(), builder => builder.Clear());
        PoolSlot<StringBuilder> slot = pool.TakeSlot();
        slot.Object.Append("used");

        pool.Release(slot);

        Assert.That(pool.TakeSlot().Object.Length, Is.Zero);
    }

    [Test]
    public void Create_NoName_IsNamedAfterTheObjectType()
    {
        using Pool<List<int>> pool = Pool.Create(1, () => new List<int>());

        Assert.That(pool.Name, Is.EqualTo("Pool<List<Int32>>"));
    }

    [Test]
    public void Create_Options_AppliesThem()
    {
        using Pool<StringBuilder> pool = Pool.Create(new PoolOptions { MaxCapacity = 3, Name = "builders" }, () => new StringBuilder());

        Assert.That(pool.Name, Is.EqualTo("builders"));
        Assert.That(pool.MaxCapacity, Is.EqualTo(3));
    }

    [TestCase(0)]
    [TestCase(-1)]
    public void Create_MaxCapacityBelowOne_Throws(int maxCapacity)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => Pool.Create(maxCapacity, () => new StringBuilder()));

        Assert.That(exception!.ParamName, Is.EqualTo("maxCapacity"));
    }

    [Test]
    public void Create_NullFactory_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => Pool.Create<StringBuilder>(1, factory: null!));

        Assert.That(exception!.ParamName, Is.EqualTo("factory"));
    }

    [Test]
    public void Create_NullOptions_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => Pool.Create(options: null!, () => new StringBuilder()));

        Assert.That(exception!.ParamName, Is.EqualTo("options"));
    }

    [Test]
    public void Create_FactoryReturnsNull_TakeThrowsAndKeepsTheCap()
    {
        using Pool<StringBuilder> pool = Pool.Create(1, () => (StringBuilder)null!);

        var exception = Assert.Throws<InvalidOperationException>(() => pool.TakeSlot());

        Assert.That(exception!.Message, Is.EqualTo("The pool 'Pool<StringBuilder>' got null from ObjectConstructor (or the factory given to Pool.Create)."));
        AssertCounts(pool, total: 0, available: 0);
    }

    // The pool behind Pool.Create is an internal type, which a user never named.
    [Test]
    public void Create_TakeAfterDispose_ThrowsNamingThePoolNotAnInternalType()
    {
        Pool<StringBuilder> pool = Pool.Create(new PoolOptions { MaxCapacity = 1, Name = "builders" }, () => new StringBuilder());
        pool.Dispose();

        var exception = Assert.Throws<ObjectDisposedException>(() => pool.TakeSlot());

        Assert.That(exception!.ObjectName, Is.EqualTo("builders"));
    }
}
