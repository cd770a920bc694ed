namespace PoolBench.Echo.Load;

/// <summary>One combination of the echo load's settings, run against every server in turn.</summary>
internal sealed record EchoCell(string Protocol, int Connections, int Size, int Pipeline);
