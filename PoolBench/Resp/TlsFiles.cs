using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace PoolBench.Resp;

/// <summary>A self-signed certificate for 127.0.0.1 and its key, as PEM files in a folder of their own, deleted on
/// dispose: what <c>resp --tls</c> gives every server, so that they encrypt with the same key.</summary>
internal sealed class TlsFiles : IDisposable
{
    private readonly string _folder;

    private TlsFiles(string folder)
    {
        _folder = folder;
    }

    /// <summary>Gets the certificate's PEM file.</summary>
    public string CertificatePath => Path.Combine(_folder, "cert.pem");

    /// <summary>Gets the private key's PEM file.</summary>
    public string KeyPath => Path.Combine(_folder, "key.pem");

    /// <summary>Makes the pair: an RSA 2048 key, as redis's own test certificates use.</summary>
    public static TlsFiles Create()
    {
        string folder = Directory.CreateTempSubdirectory("poolbench-tls-").FullName;
        using var key = RSA.Create(2048);
        var request = new CertificateRequest("CN=localhost", key, HashAlgorithmName.SHA256, RSASignaturePadding.Pkcs1);
        var names = new SubjectAlternativeNameBuilder();
        names.AddIpAddress(System.Net.IPAddress.Loopback);
        names.AddDnsName("localhost");
        request.CertificateExtensions.Add(names.Build());
        using X509Certificate2 certificate = request.CreateSelfSigned(DateTimeOffset.UtcNow.AddDays(-1), DateTimeOffset.UtcNow.AddDays(30));
        var files = new TlsFiles(folder);
        File.WriteAllText(files.CertificatePath, certificate.ExportCertificatePem());
        File.WriteAllText(files.KeyPath, key.ExportPkcs8PrivateKeyPem());
        return files;
    }

    /// <inheritdoc/>
    public void Dispose() => Directory.Delete(_folder, recursive: true);
}
