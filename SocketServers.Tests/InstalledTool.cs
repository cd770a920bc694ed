namespace SocketServers.Tests;

/// <summary>Finds a program the tests run from a Debian package that .ci/run installs (redis-tools, redis-server). Where it
/// is missing a test is inconclusive, and under CI (CI=true) it fails: it never passes without having run.</summary>
internal static class InstalledTool
{
    /// <summary>The program's path on PATH; the test is inconclusive without it, or fails under CI.</summary>
    /// <param name="name">The program.</param>
    /// <param name="package">The Debian package that has it, for the message.</param>
    public static string Find(string name, string package)
    {
        foreach (string directory in (Environment.GetEnvironmentVariable("PATH") ?? string.Empty).Split(Path.PathSeparator))
        {
            string path = Path.Combine(directory, name);
            if (File.Exists(path))
            {
                return path;
            }
        }

        string missing = $"{name} is not installed (Debian: apt-get install {package})";
        if (Environment.GetEnvironmentVariable("CI") == "true")
        {
            Assert.Fail(missing);
        }

        Assert.Inconclusive(missing);
        return name;
    }
}
