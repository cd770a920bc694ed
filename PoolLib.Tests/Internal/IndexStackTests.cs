using PoolLib.Internal;

namespace PoolLib.Tests.Internal;

public sealed class IndexStackTests
{
    [Test]
    public void Pop_AfterPushesOverSeveralBlocks_ReturnsThemNewestFirst()
    {
        var stack = new IndexStack();
        for (int i = 0; i < 10_000; i++)
        {
            stack.Push(i);
        }

        int[] popped = [.. Enumerable.Range(0, 10_000).Select(_ => stack.Pop())];

        Assert.That(popped, Is.EqualTo(Enumerable.Range(0, 10_000).Reverse()));
        Assert.That(stack.Count, Is.Zero);
    }

    [Test]
    public void Push_AfterClear_StartsEmpty()
    {
        var stack = new IndexStack();
        stack.Push(1);
        stack.Push(2);

        stack.Clear();
        stack.Push(3);

        Assert.That(stack.Count, Is.EqualTo(1));
        Assert.That(stack.Pop(), Is.EqualTo(3));
    }
}
