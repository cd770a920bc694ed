using NLog;
using PoolBench.Report;

namespace PoolBench;

/// <summary>Finds the programs a scenario runs (redis-server, redis-benchmark) on the <c>PATH</c>.</summary>
internal static class InstalledProgram
{
    private static readonly Logger s_log = LogManager.GetCurrentClassLogger();

    /// <summary>The full path of <paramref name="name"/> in the first folder of the <c>PATH</c> that holds it, or null.</summary>
    public static string? Find(string name)
        => (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(Path.PathSeparator)
            .Select(directory => Path.Combine(directory, name))
            .FirstOrDefault(File.Exists);

    /// <summary>
    /// <see cref="Find"/> for a program whose peer a run may leave out: where it is missing, a warning says what is
    /// skipped, or, with <c>CI=true</c> in the environment, the run fails, so that an install that failed cannot pass as
    /// a skip.
    /// </summary>
    /// <param name="name">The program.</param>
    /// <param name="package">The Debian package that installs it.</param>
    /// <param name="skipped">What runs without it, for the message: "connections: redis-benchmark".</param>
    /// <param name="report">Where a failure goes.</param>
    /// <returns>The program's path, or null when it is missing.</returns>
    public static string? FindOrSkip(string name, string package, string skipped, BenchReport report)
    {
        if (Find(name) is string path)
        {
            return path;
        }

        string missing = $"{skipped} is skipped: {name} is not installed (apt-get install {package})";
        if (Environment.GetEnvironmentVariable("CI") == "true")
        {
            report.Fail(missing);
        }
        else
        {
            s_log.Warn(missing);
        }

        return null;
    }
}
