using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;

namespace PoolLib.Internal;

/// <summary>
/// A meter's instruments, made together on a <see cref="Meter"/> of their own when first wanted, and made again on a new
/// one when first wanted after a listener threw while they were published.
/// </summary>
/// <remarks>
/// Making an instrument publishes it: every started listener's <see cref="MeterListener.InstrumentPublished"/> runs on
/// the making thread, and an exception from one ends the publication there and comes out of the make. A set that a
/// listener broke is withdrawn whole by disposing its meter, so that the listeners that took some of its instruments
/// see them completed, and the next attempt publishes no instrument twice. Until an attempt succeeds
/// <see cref="Current"/> is <see langword="null"/> and nothing is measured; the owners try again whenever they start
/// observing something new, never on a measurement's path. Compiled into PoolLib and, linked as source, into
/// SocketServers, as <see cref="WeakRegistry{T}"/> is. Thread safety: every member may be called from any thread;
/// attempts are made one at a time.
/// </remarks>
/// <typeparam name="TInstruments">The set, made by the factory on the meter it is given.</typeparam>
/// <param name="meterName">The meter's name.</param>
/// <param name="create">Makes every instrument of the set on the meter it is given.</param>
internal sealed class MeterInstruments<TInstruments>(string meterName, Func<Meter, TInstruments> create)
    where TInstruments : class
{
    private readonly Lock _lock = new();

    // Null until an attempt published the whole set; then set once, under _lock, and never changed.
    private TInstruments? _current;

    /// <summary>Gets the instruments, or <see langword="null"/> while no attempt has published them all.</summary>
    public TInstruments? Current => Volatile.Read(ref _current);

    /// <summary>Makes and publishes the instruments unless they are; never throws, whatever a listener does.</summary>
    public void EnsurePublished()
    {
        if (Current is null)
        {
            Publish();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Publish()
    {
        using (_lock.EnterScope())
        {
            if (_current is not null)
            {
                return;
            }

            var meter = new Meter(meterName);
            TInstruments instruments;
            try
            {
                instruments = create(meter);
            }
            catch (Exception)
            {
                Withdraw(meter);
                return;
            }

            // A listener that started observing something new from its callback, on this thread, published a set first.
            if (_current is not null)
            {
                Withdraw(meter);
                return;
            }

            Volatile.Write(ref _current, instruments);
        }
    }

    private static void Withdraw(Meter meter)
    {
        try
        {
            meter.Dispose();
        }
        catch (Exception)
        {
            // Disposing runs the listeners' MeasurementsCompleted, which may throw too; the meter is gone all the same.
        }
    }
}
