using System.Net;
using System.Net.Sockets;
using PoolLib;

namespace SocketServers.Tests;

public sealed class SocketArgsPoolTests
{
    [TestCase(-1)]
    [TestCase(int.MinValue)]
    public void Constructor_NegativeBufferSize_Throws(int bufferSize)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new SocketArgsPool(bufferSize, 4));

        Assert.That(exception!.ParamName, Is.EqualTo("bufferSize"));
    }

    [Test]
    public void TakeSlot_BufferSizeZero_ArgsHasNoBufferBeforeAndAfterARental()
    {
        using var pool = new SocketArgsPool(0, 1);
        PoolSlot<SocketAsyncEventArgs> slot = pool.TakeSlot();
        Assert.That(slot.Object.Buffer, Is.Null);
        slot.Object.SetBuffer(new byte[16], 0, 16);

        slot.Dispose();
        PoolSlot<SocketAsyncEventArgs> again = pool.TakeSlot();

        Assert.That(again.Object, Is.SameAs(slot.Object));
        Assert.That(again.Object.Buffer, Is.Null, "a lent buffer is not kept past the rental");
        again.Dispose();
    }

    [TestCase(-1)]
    [TestCase(5)]
    public void Constructor_InitialCountOutOfRange_Throws(int initialCount)
    {
        var exception = Assert.Throws<ArgumentOutOfRangeException>(() => _ = new SocketArgsPool(64, 4, initialCount));

        Assert.That(exception!.ParamName, Is.EqualTo("initialCount"));
    }

    [Test]
    public void Constructor_InitialCount_CreatesThatManyIdleArgs()
    {
        using var pool = new SocketArgsPool(64, 4, initialCount: 3);

        Assert.That(pool.TotalCount, Is.EqualTo(3));
        Assert.That(pool.AvailableCount, Is.EqualTo(3));
        Assert.That(pool.BufferSize, Is.EqualTo(64));
    }

    [Test]
    public void TakeSlot_NewArgs_OwnsFullBufferAndCarriesSlotInUserToken()
    {
        using var pool = new SocketArgsPool(128, 2);

        using PoolSlot<SocketAsyncEventArgs> first = pool.TakeSlot();
        using PoolSlot<SocketAsyncEventArgs> second = pool.TakeSlot();

        Assert.That(first.Object.UserToken, Is.SameAs(first));
        Assert.That(first.Object.Buffer, Has.Length.EqualTo(128));
        Assert.That(first.Object.Offset, Is.Zero);
        Assert.That(first.Object.Count, Is.EqualTo(128));
        Assert.That(second.Object.Buffer, Is.Not.SameAs(first.Object.Buffer));
    }

    [Test]
    public void Release_ThroughUserToken_ResetsArgsForTheNextUser()
    {
        using var pool = new SocketArgsPool(128, 1);
        SocketAsyncEventArgs args = pool.TakeSlot().Object;
        byte[] ownBuffer = args.Buffer!;
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        args.AcceptSocket = socket;
        args.RemoteEndPoint = new IPEndPoint(IPAddress.Loopback, 7);
        args.SocketFlags = SocketFlags.Peek;
        args.SetBuffer(10, 5);

        pool.Release((PoolSlot<SocketAsyncEventArgs>)args.UserToken!);
        PoolSlot<SocketAsyncEventArgs> again = pool.TakeSlot();

        Assert.That(again.Object, Is.SameAs(args));
        Assert.That(args.AcceptSocket, Is.Null);
        Assert.That(args.RemoteEndPoint, Is.Null);
        Assert.That(args.SocketFlags, Is.EqualTo(SocketFlags.None));
        Assert.That(args.Buffer, Is.SameAs(ownBuffer));
        Assert.That((args.Offset, args.Count), Is.EqualTo((0, 128)));
        Assert.That(args.UserToken, Is.SameAs(again));
        again.Dispose();
    }

    [Test]
    public void Release_ArgsWithBufferListOrForeignBuffer_RestoresOwnBuffer()
    {
        using var pool = new SocketArgsPool(32, 1);
        PoolSlot<SocketAsyncEventArgs> slot = pool.TakeSlot();
        byte[] ownBuffer = slot.Object.Buffer!;
        slot.Object.SetBuffer(null, 0, 0);
        slot.Object.BufferList = [new ArraySegment<byte>(new byte[8])];

        slot.Dispose();

        Assert.That(slot.Object.BufferList, Is.Null);
        Assert.That(slot.Object.Buffer, Is.SameAs(ownBuffer));
        Assert.That(slot.Object.Count, Is.EqualTo(32));
    }

    [Test]
    [CancelAfter(10_000)]
    public async Task Release_WhileReceivePending_ThrowsAndDiscardsArgs(CancellationToken cancellationToken)
    {
        using var pool = new SocketArgsPool(64, 2);
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen();
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await client.ConnectAsync(listener.LocalEndPoint!, cancellationToken);
        using Socket accepted = await listener.AcceptAsync(cancellationToken);
        PoolSlot<SocketAsyncEventArgs> slot = pool.TakeSlot();
        var completed = new TaskCompletionSource<SocketError>(TaskCreationOptions.RunContinuationsAsynchronously);
        slot.Object.Completed += (_, args) => completed.TrySetResult(args.SocketError);
        Assume.That(accepted.ReceiveAsync(slot.Object), Is.True, "the receive is pending: nothing was sent");

        Assert.Throws<InvalidOperationException>(() => pool.Release(slot));

        Assert.That(pool.TotalCount, Is.Zero, "the busy args was discarded, not stored");
        Assert.That(pool.AvailableCount, Is.Zero);
        accepted.Dispose();
        Assert.That(await completed.Task.WaitAsync(cancellationToken), Is.Not.EqualTo(SocketError.Success));
    }
}
