namespace PoolBench.Echo.Load;

/// <summary>One combination of the echo load's settings, run against every server in turn.</summary>
internal sealed record EchoCell(string Protocol, int Connections, int Size, int Pipeline)
{
    /// <summary>The most bytes a connection may have in flight: size × pipeline.</summary>
    public const int MaxBytesInFlight = 1 << 20;

    /// <summary>Why the cell cannot run with <paramref name="clients"/> clients sharing its connections; null when it can.</summary>
    public string? Problem(int clients) =>
        Connections < clients ? $"{clients} clients need at least as many connections, not {Connections}"
        : Protocol == "udp" && Size < MessagePattern.HeaderSize
            ? $"UDP messages carry an {MessagePattern.HeaderSize}-byte number, so --size must be at least {MessagePattern.HeaderSize}, not {Size}"
        : (long)Size * Pipeline > MaxBytesInFlight
            ? $"size × pipeline must stay within {MaxBytesInFlight} bytes in flight per connection, not {Size} × {Pipeline}"
        : null;

    /// <summary>
    /// Client <paramref name="index"/>'s share of the connections split over <paramref name="clients"/>, the first ones
    /// taking one more where it does not divide.
    /// </summary>
    public int Share(int clients, int index) => Connections / clients + (index < Connections % clients ? 1 : 0);
}
