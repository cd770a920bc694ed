using System.Diagnostics.CodeAnalysis;

namespace PoolLib.Internal;

/// <summary>
/// Runs items one at a time, in the order they were added, on a thread that calls <see cref="RunPending"/>. A
/// thread that finds another running them leaves its items to that one instead of waiting, so that no caller
/// waits while another's item runs: items run user code, which may block.
/// </summary>
internal sealed class SerialQueue<TItem>(Action<TItem> run)
{
    private readonly Queue<TItem> _items = new();

    // Uninterruptible: an item added must not be lost to an interrupt of the thread that adds it.
    private readonly UninterruptibleLock _lock = new();

    // Whether a thread is running items, under _lock; while it is, that thread runs every item added.
    private bool _running;

    /// <summary>Adds an item for the next <see cref="RunPending"/>.</summary>
    public void Add(TItem item)
    {
        using (_lock.EnterScope())
        {
            _items.Enqueue(item);
        }
    }

    /// <summary>Runs every item added so far, and those added meanwhile, unless another thread is running them.</summary>
    /// <remarks>An item that throws stops the run; the items after it wait for the next call.</remarks>
    public void RunPending()
    {
        using (_lock.EnterScope())
        {
            if (_running)
            {
                return;
            }

            _running = true;
        }

        try
        {
            while (TryTakeNext(out var item))
            {
                run(item);
            }
        }
        catch
        {
            using (_lock.EnterScope())
            {
                _running = false;
            }

            throw;
        }
    }

    /// <summary>Takes the next item, or, when there is none, stops running under the same lock, so that no item added is left behind.</summary>
    private bool TryTakeNext([MaybeNullWhen(false)] out TItem item)
    {
        using (_lock.EnterScope())
        {
            _running = _items.TryDequeue(out item);
            return _running;
        }
    }
}
