namespace SocketServers.Tests;

public sealed partial class ProgramTests
{
    [TestCase("tcp", TestName = "Main_TlsCertificateMissing_ExitsWithOneLineNamingIt")]
    [TestCase("resp", TestName = "Main_RespTlsCertificateMissing_ExitsWithOneLineNamingIt")]
    [CancelAfter(30_000)]
    public async Task Main_TlsCertificateDoesNotLoad_ExitsWithOneLineNamingIt(string servers, CancellationToken cancellationToken)
    {
        string missing = Path.Combine(Path.GetTempPath(), $"socketservers-missing-{Guid.NewGuid():N}.pem");

        (int exitCode, string stdout, string stderr) = await RunToEndAsync([servers, "--port", "0", "--tls-cert", missing], cancellationToken);

        Assert.That(exitCode, Is.EqualTo(1));
        Assert.That(stderr.TrimEnd().Split('\n'), Has.Length.EqualTo(1), stderr);
        Assert.That(stderr, Does.StartWith("SocketServers: ").And.Contain(missing));
        Assert.That(stdout, Does.Not.Contain("listening"));
    }
}
