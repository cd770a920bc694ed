namespace PoolBench.Pools;

/// <summary>How long a worker keeps what it takes.</summary>
public enum RentalPattern
{
    /// <summary>Take one, return it at once.</summary>
    Short,

    /// <summary>Take N, then return all N (the pattern of the ASP.NET Core pool retention issue).</summary>
    Long,
}
