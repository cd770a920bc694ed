namespace PoolLib.Internal;

/// <summary>
/// A mutual-exclusion lock whose entry never throws <see cref="ThreadInterruptedException"/>.
/// </summary>
/// <remarks>
/// Why: a contended <see cref="Monitor.Enter(object, ref bool)"/> throws on a thread with an
/// interrupt pending, and every holder of the pool's locks is halfway through something that must
/// finish (a slot marked idle but not yet stored, a unit of the cap taken but not yet recorded).
/// So the entry swallows the interrupt, takes the lock anyway, and the scope's
/// <see cref="Scope.Dispose"/> puts the interrupt back for the thread's next wait.
/// </remarks>
internal sealed class UninterruptibleLock
{
    /// <summary>Gets whether the calling thread holds the lock.</summary>
    public bool IsHeldByCurrentThread => Monitor.IsEntered(this);

    /// <summary>Takes the lock, waiting as long as it takes, even with an interrupt pending.</summary>
    /// <returns>The scope that holds the lock; dispose it to leave.</returns>
    public Scope EnterScope()
    {
        bool interrupted = false;
        bool taken = false;
        while (!taken)
        {
            try
            {
                Monitor.Enter(this, ref taken);
            }
            catch (ThreadInterruptedException) when (!taken)
            {
                interrupted = true;
            }
        }

        return new Scope(this, interrupted);
    }

    /// <summary>
    /// Wakes every thread in <see cref="Monitor.Wait(object, int)"/> on this lock, taking it as
    /// <see cref="EnterScope"/> does, so that an interrupt cannot lose the wake-up.
    /// </summary>
    public void PulseAll()
    {
        using (EnterScope())
        {
            Monitor.PulseAll(this);
        }
    }

    /// <summary>Holds an <see cref="UninterruptibleLock"/> until disposed.</summary>
    public readonly ref struct Scope
    {
        private readonly UninterruptibleLock _lock;
        private readonly bool _interrupted;

        internal Scope(UninterruptibleLock @lock, bool interrupted)
        {
            _lock = @lock;
            _interrupted = interrupted;
        }

        /// <summary>Leaves the lock, then re-raises an interrupt that arrived while entering it.</summary>
        public void Dispose()
        {
            Monitor.Exit(_lock);
            if (_interrupted)
            {
                Thread.CurrentThread.Interrupt();
            }
        }
    }
}
