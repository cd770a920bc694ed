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
    public void ToString_NoStackTrace_SaysTheRentalWasNotSampled()
    {
        var args = new PoolLeakEventArgs("pool", TimeSpan.FromSeconds(3), stackTrace: null);

        Assert.That(args.StackTrace, Is.Null);
        Assert.That(args.ToString(), Does.Contain("'pool'").And.Contain("00:00:03").And.Contain("not one of the rentals sampled"));
    }

    [Test]
    public void ToString_StackTrace_EndsWithIt()
    {
        var trace = new StackTrace();

        var args = new PoolLeakEventArgs("pool", TimeSpan.FromSeconds(3), trace);

        Assert.That(args.ToString(), Does.EndWith(trace.ToString()));
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
