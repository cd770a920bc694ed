namespace PoolBench.Report;

/// <summary>No font was found to label the plots with.</summary>
internal sealed class PlotFontException(string message) : Exception(message);
