using System.Collections.Concurrent;

namespace PoolBench;

/// <summary>
/// The pool a user writes in a few lines over a concurrent collection (<see cref="ConcurrentBag{T}"/>
/// or <see cref="ConcurrentStack{T}"/>), filled with <c>capacity</c> objects: when empty, a take
/// creates a new object; a return that would hold more than <c>capacity</c> drops the object. The
/// count is kept beside the collection because <c>ConcurrentStack.Count</c> walks the stack.
/// </summary>
internal sealed class CollectionPoolUnderTest : IPoolUnderTest
{
    private readonly IProducerConsumerCollection<BenchItem> _items;
    private readonly int _capacity;
    private int _count;

    private CollectionPoolUnderTest(string impl, IProducerConsumerCollection<BenchItem> items, int capacity)
    {
        Impl = impl;
        _items = items;
        _capacity = capacity;
        for (int i = 0; i < capacity; i++)
        {
            Return(new BenchItem());
        }
    }

    public string Impl { get; }

    public static CollectionPoolUnderTest OverBag(int capacity) => new("ConcurrentBag", new ConcurrentBag<BenchItem>(), capacity);

    public static CollectionPoolUnderTest OverStack(int capacity) => new("ConcurrentStack", new ConcurrentStack<BenchItem>(), capacity);

    public BenchItem Take()
    {
        if (_items.TryTake(out BenchItem? item))
        {
            Interlocked.Decrement(ref _count);
            return item;
        }

        return new BenchItem();
    }

    public void Return(BenchItem item)
    {
        if (Interlocked.Increment(ref _count) <= _capacity)
        {
            _items.TryAdd(item);
        }
        else
        {
            Interlocked.Decrement(ref _count);
        }
    }

    public void Dispose()
    {
    }
}
