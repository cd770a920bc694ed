using System.Diagnostics.Metrics;
using System.Reflection;
using System.Runtime.Loader;

namespace PoolLib.Tests;

/// <summary>
/// A second copy of an assembly, loaded into a context of its own, so that its static state (a meter and its
/// instruments) starts over whatever earlier tests in the process did; what it references is the process's own copy.
/// </summary>
/// <remarks>
/// Tests that use it must not overlap with tests that read the same meter: the meters the copy creates are told apart
/// only by being new. Dispose disposes them, so that a listener started afterwards never takes the copy's
/// instruments for the original's.
/// </remarks>
internal sealed class FreshCopy : IDisposable
{
    private readonly AssemblyLoadContext _context;
    private readonly MeterListener _meters = new();
    private readonly HashSet<Meter> _created = [];
    private readonly Lock _lock = new();
    private volatile bool _started;

    /// <summary>Loads a copy of <paramref name="original"/>, noting from now on each new meter named <paramref name="meterName"/>.</summary>
    public FreshCopy(Assembly original, string meterName)
    {
        _meters.InstrumentPublished = (instrument, _) =>
        {
            // Start replays the instruments published so far: those of meters the original made.
            if (_started && instrument.Meter.Name == meterName)
            {
                using (_lock.EnterScope())
                {
                    _created.Add(instrument.Meter);
                }
            }
        };
        _meters.Start();
        _started = true;
        _context = new AssemblyLoadContext($"fresh {original.GetName().Name}", isCollectible: true);
        Assembly = _context.LoadFromAssemblyPath(original.Location);
    }

    public Assembly Assembly { get; }

    /// <summary>Creates an instance of the copy's type <paramref name="typeName"/> with the constructor <paramref name="arguments"/> fit.</summary>
    public object Create(string typeName, params object?[] arguments)
        => Activator.CreateInstance(Assembly.GetType(typeName, throwOnError: true)!, arguments)!;

    /// <summary>Calls the public instance method <paramref name="name"/> of <paramref name="target"/>, unwrapping what it throws.</summary>
    public static object? Call(object target, string name, params object?[] arguments)
        => target.GetType().GetMethod(name, [.. arguments.Select(argument => argument!.GetType())])!
            .Invoke(target, BindingFlags.DoNotWrapExceptions, binder: null, arguments, culture: null);

    public void Dispose()
    {
        _meters.Dispose();
        using (_lock.EnterScope())
        {
            foreach (Meter meter in _created)
            {
                meter.Dispose();
            }
        }

        _context.Unload();
    }
}
