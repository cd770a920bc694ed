namespace PoolBench.Echo.Load;

/// <summary>The phase shared by all clients of one echo cell; only the scenario moves it forward.</summary>
internal sealed class EchoRun
{
    // Written by the scenario, read by every client once per message: always through Volatile.
    private int _phase = (int)EchoPhase.WarmUp;

    public EchoPhase Phase => (EchoPhase)Volatile.Read(ref _phase);

    public bool Measuring => Phase == EchoPhase.Measure;

    public void Enter(EchoPhase phase) => Volatile.Write(ref _phase, (int)phase);
}
