using System.Diagnostics.Metrics;

namespace PoolLib.Tests.Fakes;

/// <summary>
/// A <see cref="MeterListener"/> that fails as a faulty exporter might: once started, it throws as each new instrument
/// of one meter is published.
/// </summary>
internal static class ThrowingMeterListener
{
    /// <returns>The listener, started; dispose it to stop the faults.</returns>
    public static MeterListener Start(string meterName)
    {
        bool started = false;
        var listener = new MeterListener
        {
            InstrumentPublished = (instrument, _) =>
            {
                // Start replays the instruments already published; only those published while it listens fail.
                if (Volatile.Read(ref started) && instrument.Meter.Name == meterName)
                {
                    throw new InvalidOperationException($"A listener failed on {instrument.Name}.");
                }
            },
        };
        listener.Start();
        Volatile.Write(ref started, true);
        return listener;
    }
}
