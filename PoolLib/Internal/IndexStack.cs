namespace PoolLib.Internal;

/// <summary>
/// A stack of indices kept in blocks of a fixed length, so that no push copies the indices before it, as a growing
/// <see cref="Stack{T}"/> would inside one release.
/// </summary>
internal sealed class IndexStack
{
    private const int BlockShift = 12;
    private const int BlockMask = (1 << BlockShift) - 1;

    // Blocks of 4,096 indices; the first _count of their entries, in order, are the stack, newest last.
    private readonly List<int[]> _blocks = [];
    private int _count;

    public int Count => _count;

    public void Push(int index)
    {
        if (_count >> BlockShift == _blocks.Count)
        {
            _blocks.Add(new int[1 << BlockShift]);
        }

        _blocks[_count >> BlockShift][_count & BlockMask] = index;
        _count++;
    }

    public int Pop()
    {
        _count--;
        return _blocks[_count >> BlockShift][_count & BlockMask];
    }

    /// <summary>Empties the stack and lets its blocks go.</summary>
    public void Clear()
    {
        _blocks.Clear();
        _count = 0;
    }
}
