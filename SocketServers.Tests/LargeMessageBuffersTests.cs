using SocketServers.Internal;

namespace SocketServers.Tests;

public sealed class LargeMessageBuffersTests
{
    [Test]
    public void NextSize_FromTheBufferSize_DoublesUpToTheMaxMessageSize()
    {
        var buffers = new LargeMessageBuffers(bufferSize: 1000, maxMessageSize: 5000, budget: 100_000);

        int[] sizes = [buffers.NextSize(1000), buffers.NextSize(2000), buffers.NextSize(4000), buffers.NextSize(5000)];

        Assert.That(sizes, Is.EqualTo(new[] { 2000, 4000, 5000, 0 }));
    }

    [Test]
    public void NextSize_MaxMessageSizeIsTheBufferSize_NeverGrows()
    {
        Assert.That(new LargeMessageBuffers(1000, 1000, 100_000).NextSize(1000), Is.Zero);
    }

    [Test]
    public void TryTake_BudgetSpentByLentBuffers_Fails()
    {
        var buffers = new LargeMessageBuffers(1000, 4000, budget: 6000);
        Assert.That(buffers.TryTake(4000, out _), Is.True);

        bool taken = buffers.TryTake(4000, out byte[]? refused);

        Assert.That((taken, refused, buffers.LentBytes), Is.EqualTo((false, (byte[]?)null, 4000L)));
    }

    [Test]
    public void TryTake_BufferReturned_LendsTheSameOneAgain()
    {
        var buffers = new LargeMessageBuffers(1000, 4000, budget: 4000);
        Assert.That(buffers.TryTake(4000, out byte[]? first), Is.True);
        buffers.Return(first!);

        Assert.That(buffers.TryTake(4000, out byte[]? second), Is.True);

        Assert.That(second, Is.SameAs(first));
        Assert.That(buffers.AllocatedBytes, Is.EqualTo(4000));
    }

    [Test]
    public void TryTake_FreeBufferOfAnotherSizeInTheWay_DropsItToMakeRoom()
    {
        var buffers = new LargeMessageBuffers(1000, 4000, budget: 5000);
        Assert.That(buffers.TryTake(2000, out byte[]? small), Is.True);
        buffers.Return(small!);

        bool taken = buffers.TryTake(4000, out _);

        Assert.That((taken, buffers.AllocatedBytes, buffers.LentBytes), Is.EqualTo((true, 4000L, 4000L)));
    }
}
