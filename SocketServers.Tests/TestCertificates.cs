using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace SocketServers.Tests;

/// <summary>Self-signed certificates for TLS tests, and their PEM files.</summary>
internal static class TestCertificates
{
    /// <summary>A new self-signed ECDSA P-256 certificate for <c>localhost</c>, with its private key.</summary>
    public static X509Certificate2 Create(string subject = "CN=localhost")
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(subject, key, HashAlgorithmName.SHA256);
        var names = new SubjectAlternativeNameBuilder();
        names.AddDnsName("localhost");
        request.CertificateExtensions.Add(names.Build());
        return request.CreateSelfSigned(DateTimeOffset.UtcNow.AddMinutes(-5), DateTimeOffset.UtcNow.AddDays(1));
    }

    /// <summary>Writes <paramref name="certificate"/> and its key as PEM files, each replaced in one rename, the
    /// certificate first.</summary>
    public static void WritePem(X509Certificate2 certificate, string certificatePath, string keyPath)
    {
        Replace(certificatePath, certificate.ExportCertificatePem());
        Replace(keyPath, certificate.GetECDsaPrivateKey()!.ExportPkcs8PrivateKeyPem());
    }

    private static void Replace(string path, string content)
    {
        string temporary = path + ".new";
        File.WriteAllText(temporary, content);
        File.Move(temporary, path, overwrite: true);
    }
}
