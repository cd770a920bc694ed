namespace PoolBench.Connections;

/// <summary>A client of the <c>connections</c> scenario, set up for one worker count: it runs SET, then GET, against redis-server.</summary>
internal interface IConnectionsPeer : IAsyncDisposable
{
    /// <summary>Its name in the tables.</summary>
    string Name { get; }

    /// <summary>Runs each test once with <paramref name="requests"/> requests: SET, then GET.</summary>
    /// <exception cref="InvalidOperationException">The peer could not run (redis-benchmark failed).</exception>
    /// <exception cref="TimeoutException">A test did not finish in time.</exception>
    Task<IReadOnlyList<TestRound>> RunAsync(int requests);
}
