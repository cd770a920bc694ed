using System.Reflection;

namespace SocketServers.Tests;

/// <summary>What a project that references the SocketServers library gets: the servers, and nothing of the console host,
/// which is a project of its own.</summary>
public sealed class LibraryOutputTests
{
    // The host's settings, its command line and logging packages, and an executable's apphost and runtime settings.
    private static readonly string[] s_hostFiles =
        ["appsettings.json", "NLog.config", "System.CommandLine.dll", "NLog.dll", "NLog.Extensions.Logging.dll", "SocketServers", "SocketServers.exe", "SocketServers.runtimeconfig.json"];

    private static readonly string[] s_hostAssemblies = ["System.CommandLine", "NLog", "NLog.Extensions.Logging", "Microsoft.Extensions.Hosting"];

    [Test]
    public void BuildOutput_OfTheLibrary_HoldsNoHostFiles()
    {
        // The library's own build folder, as the build of this project resolved its reference (SocketServers.Tests.csproj).
        string library = typeof(LibraryOutputTests).Assembly.GetCustomAttributes<AssemblyMetadataAttribute>()
            .Single(attribute => attribute.Key == "SocketServersBuildOutput").Value!;
        string folder = Path.GetDirectoryName(library)!;

        Assert.That(library, Does.Exist, "the library in its build folder");
        Assert.That(s_hostFiles.Where(file => File.Exists(Path.Combine(folder, file))), Is.Empty);
        Assert.That(Directory.GetDirectories(folder), Is.Empty, "no satellite folders of the host's packages");
    }

    [Test]
    public void Assembly_OfTheLibrary_HasNoEntryPointNorHostReferences()
    {
        Assembly library = typeof(TcpServer).Assembly;

        Assert.That(library.EntryPoint, Is.Null);
        Assert.That(library.GetReferencedAssemblies().Select(reference => reference.Name), Has.No.AnyOf(s_hostAssemblies));
    }
}
