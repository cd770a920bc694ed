using System.Net.Sockets;
using PoolLib;

namespace PoolBench.Article;

/// <summary>The article's SocketClientPool: each args owns one buffer and carries its slot in UserToken.</summary>
internal sealed class ArticleArgsPool : Pool<SocketAsyncEventArgs>
{
    private readonly int _bufferSize;

    public ArticleArgsPool(int bufferSize, int maxCapacity)
        : base(maxCapacity)
    {
        _bufferSize = bufferSize;
    }

    protected override SocketAsyncEventArgs ObjectConstructor()
    {
        var args = new SocketAsyncEventArgs();
        args.SetBuffer(new byte[_bufferSize], 0, _bufferSize);
        return args;
    }

    protected override void HoldSlotInObject(SocketAsyncEventArgs args, PoolSlot<SocketAsyncEventArgs> slot) => args.UserToken = slot;
}
