using System.Diagnostics;

namespace PoolLib.Tests;

public sealed class PoolLeakEventArgsTests
{
    [Test]
    public void Constructor_NullPoolName_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => new PoolLeakEventArgs(null!, TimeSpan.Zero, new StackTrace()));

        Assert.That(exception!.ParamName, Is.EqualTo("poolName"));
    }

    [Test]
    public void Constructor_NullStackTrace_Throws()
    {
        var exception = Assert.Throws<ArgumentNullException>(() => new PoolLeakEventArgs("pool", TimeSpan.Zero, null!));

        Assert.That(exception!.ParamName, Is.EqualTo("stackTrace"));
    }

    [Test]
    public void Constructor_NegativeHeldFor_Throws()
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => new PoolLeakEventArgs("pool", TimeSpan.FromSeconds(-1), new StackTrace()));

        Assert.That(exception!.ParamName, Is.EqualTo("heldFor"));
    }

    [Test]
    public void Constructor_ValidArguments_KeepsThem()
    {
        var trace = new StackTrace();

        var args = new PoolLeakEventArgs("pool", TimeSpan.FromSeconds(3), trace);

        Assert.That(args.PoolName, Is.EqualTo("pool"));
        Assert.That(args.HeldFor, Is.EqualTo(TimeSpan.FromSeconds(3)));
        Assert.That(args.StackTrace, Is.SameAs(trace));
    }
}
