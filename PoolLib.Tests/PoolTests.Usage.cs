using System.Net;
using System.Net.Sockets;

namespace PoolLib.Tests;

// The three ways the README shows the pool being used, written only against its public surface.
public sealed partial class PoolTests
{
    [Test]
    public void Usage_SubclassForSocketArgs_PrewarmsAndKeepsSlotInUserToken()
    {
        using var pool = new SocketClientPool(bufferSize: 1024, initialCount: 4, maxCapacity: 10);

        PoolSlot<SocketAsyncEventArgs> slot = pool.TakeSlot();

        Assert.That(pool.TotalCount, Is.EqualTo(4));
        Assert.That(slot.Object.UserToken, Is.SameAs(slot));
        Assert.That(slot.Object.Buffer, Has.Length.EqualTo(1024));
        pool.Release((PoolSlot<SocketAsyncEventArgs>)slot.Object.UserToken!);
        Assert.That(pool.AvailableCount, Is.EqualTo(4));
    }

    [Test]
    public void Usage_UsingBlock_ReturnsTheSlotAtTheEnd()
    {
        using var pool = new SocketClientPool(bufferSize: 64, initialCount: 0, maxCapacity: 2);

        using (var slot = pool.TakeSlot())
        {
            slot.Object.SetBuffer(0, 8);
            Assert.That(pool.AvailableCount, Is.Zero);
        }

        Assert.That(pool.AvailableCount, Is.EqualTo(1));
        Assert.That(pool.TakeSlot().Object.Count, Is.EqualTo(64), "CleanUp restored the whole buffer window");
    }

    [Test]
    [CancelAfter(20_000)]
    public async Task Usage_ReleaseFromCompletionHandler_SlotComesHomeThroughUserToken(CancellationToken cancellationToken)
    {
        using var pool = new SocketClientPool(bufferSize: 1024, initialCount: 1, maxCapacity: 1);
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen();
        using var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await client.ConnectAsync(listener.LocalEndPoint!, cancellationToken);
        using Socket server = await listener.AcceptAsync(cancellationToken);
        var received = new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);

        SocketAsyncEventArgs args = pool.TakeSlot().Object;
        args.Completed += (_, completed) =>
        {
            string text = System.Text.Encoding.ASCII.GetString(completed.Buffer!, completed.Offset, completed.BytesTransferred);
            pool.Release((PoolSlot<SocketAsyncEventArgs>)completed.UserToken!);
            received.SetResult(text);
        };
        bool pending = server.ReceiveAsync(args);
        Assert.That(pending, Is.True, "nothing was sent yet, so the receive must be pending");
        await client.SendAsync("ping"u8.ToArray(), cancellationToken);

        Assert.That(await received.Task.WaitAsync(s_waitBound, cancellationToken), Is.EqualTo("ping"));
        Assert.That(pool.AvailableCount, Is.EqualTo(1));
    }

    /// <summary>The article's pool, as a user would write it from the documented surface.</summary>
    private sealed class SocketClientPool : Pool<SocketAsyncEventArgs>
    {
        private readonly int _bufferSize;

        public SocketClientPool(int bufferSize, int initialCount, int maxCapacity)
            : base(maxCapacity)
        {
            _bufferSize = bufferSize;
            TryAllocatePush(initialCount);
        }

        protected override SocketAsyncEventArgs ObjectConstructor()
        {
            var args = new SocketAsyncEventArgs();
            args.SetBuffer(new byte[_bufferSize], 0, _bufferSize);
            return args;
        }

        protected override void CleanUp(SocketAsyncEventArgs @object) => @object.SetBuffer(0, _bufferSize);

        protected override void HoldSlotInObject(SocketAsyncEventArgs @object, PoolSlot<SocketAsyncEventArgs> slot) =>
            @object.UserToken = slot;
    }
}
