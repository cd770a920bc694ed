namespace PoolLib.Internal;

/// <summary>
/// The back-off of the library's retry loops: spins a little longer each time, then yields the core.
/// </summary>
/// <remarks>
/// Unlike <see cref="SpinWait"/>, it never calls <see cref="Thread.Sleep(int)"/>, which throws
/// <see cref="ThreadInterruptedException"/> on a thread with an interrupt pending. A loop that
/// backs off between two steps of one operation (a slot popped but not yet handed over, a gate
/// entered but not yet recorded) must not stop halfway, or a slot or a unit of capacity is lost.
/// </remarks>
internal struct RetryBackoff
{
    // Spins double each time up to 2^9 iterations; after that every round yields.
    private const int SpinRounds = 10;

    private int _rounds;

    /// <summary>Waits a little before the caller retries.</summary>
    public void Wait()
    {
        if (_rounds < SpinRounds && Environment.ProcessorCount > 1)
        {
            Thread.SpinWait(1 << _rounds);
            _rounds++;
        }
        else
        {
            Thread.Yield();
        }
    }
}
