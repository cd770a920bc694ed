using System.Net.Security;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>
/// The server certificate of <see cref="TlsOptions.CertificatePath"/> and <see cref="TlsOptions.KeyPath"/>: loaded at the
/// start, and reloaded whenever anything in their folders is written, created or renamed (not only the two names: a
/// Kubernetes secret is swapped in by renaming a folder their links go through). A reload that fails (a pair half
/// rewritten: the new key beside the old certificate) keeps the certificate in use; the write that completes the pair
/// reloads it. One that loads the certificate in use changes nothing.
/// </summary>
internal sealed class ServerCertificateFiles : IDisposable
{
    private readonly string _certificatePath;
    private readonly string? _keyPath;
    private readonly ILogger _logger;
    private readonly List<FileSystemWatcher> _watchers = [];
    private readonly Lock _reloading = new();

    // The certificate in use and its context (which caches the chain); replaced whole, read by every handshake.
    private Loaded? _current;

    /// <summary>Loads the certificate, and watches its files from now on.</summary>
    /// <exception cref="InvalidOperationException">A file cannot be read, or does not hold a certificate with its key; the
    /// message names the file.</exception>
    public ServerCertificateFiles(string certificatePath, string? keyPath, ILogger logger)
    {
        _certificatePath = Path.GetFullPath(certificatePath);
        _keyPath = keyPath is null ? null : Path.GetFullPath(keyPath);
        _logger = logger;
        _current = Load(_certificatePath, _keyPath);
        foreach (string folder in new[] { _certificatePath, _keyPath }.OfType<string>().Select(Path.GetDirectoryName).OfType<string>().Distinct())
        {
            Watch(folder);
        }
    }

    /// <summary>Raised after the certificate was replaced by a reload; with the new one.</summary>
    public event Action<X509Certificate2>? Reloaded;

    /// <summary>Gets the certificate in use.</summary>
    public X509Certificate2 Certificate => Volatile.Read(ref _current)!.Certificate;

    /// <summary>Gets the context of the certificate in use, for a handshake.</summary>
    public SslStreamCertificateContext Context => Volatile.Read(ref _current)!.Context;

    /// <summary>Stops watching. The certificate stays readable: a handshake under way may still use it.</summary>
    public void Dispose()
    {
        foreach (FileSystemWatcher watcher in _watchers)
        {
            watcher.Dispose();
        }
    }

    /// <summary>Watches <paramref name="folder"/>; a folder that cannot be watched (out of inotify watches) is logged, and
    /// the certificate is served without reloads.</summary>
    private void Watch(string folder)
    {
        var watcher = new FileSystemWatcher(folder)
        {
            NotifyFilter = NotifyFilters.FileName | NotifyFilters.DirectoryName | NotifyFilters.LastWrite | NotifyFilters.Size,
        };
        watcher.Changed += OnFileEvent;
        watcher.Created += OnFileEvent;
        watcher.Renamed += OnFileEvent;
        try
        {
            watcher.EnableRaisingEvents = true;
            _watchers.Add(watcher);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or PlatformNotSupportedException)
        {
            watcher.Dispose();
            _logger.CertificateNotWatched(folder, ex.Message);
        }
    }

    /// <summary>Loads a certificate, and its chain, from PKCS#12 or PEM files.</summary>
    /// <exception cref="InvalidOperationException">The files do not load; the message, one line, names the file.</exception>
    private static Loaded Load(string certificatePath, string? keyPath)
    {
        foreach (string path in new[] { certificatePath, keyPath }.OfType<string>())
        {
            if (!File.Exists(path))
            {
                throw new InvalidOperationException($"The TLS certificate does not load: there is no file '{path}'.");
            }
        }

        string file = certificatePath;
        try
        {
            X509Certificate2Collection chain = [];
            X509Certificate2 certificate;
            if (keyPath is null && X509Certificate2.GetCertContentType(certificatePath) == X509ContentType.Pkcs12)
            {
                chain = X509CertificateLoader.LoadPkcs12CollectionFromFile(certificatePath, password: null);
                certificate = chain.FirstOrDefault(c => c.HasPrivateKey) ?? throw new CryptographicException("It holds no certificate with a private key.");
                chain.Remove(certificate);
            }
            else
            {
                chain.ImportFromPemFile(certificatePath);
                file = keyPath ?? certificatePath;
                certificate = X509Certificate2.CreateFromPemFile(certificatePath, keyPath);
                chain.RemoveAt(0);
            }

            return new Loaded(certificate, SslStreamCertificateContext.Create(certificate, chain, offline: true));
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException or CryptographicException or ArgumentException)
        {
            string reason = string.Join(' ', ex.Message.Split(['\r', '\n'], StringSplitOptions.RemoveEmptyEntries));
            throw new InvalidOperationException($"The TLS certificate does not load from '{file}': {reason}", ex);
        }
    }

    private void OnFileEvent(object sender, FileSystemEventArgs e)
    {
        X509Certificate2 certificate;
        lock (_reloading)
        {
            try
            {
                Loaded loaded = Load(_certificatePath, _keyPath);
                if (loaded.Certificate.Thumbprint == Certificate.Thumbprint)
                {
                    return;
                }

                Volatile.Write(ref _current, loaded);
                certificate = loaded.Certificate;
            }
            catch (InvalidOperationException ex)
            {
                _logger.CertificateReloadFailed(ex.Message);
                return;
            }
        }

        _logger.CertificateReloaded(certificate.Subject, certificate.Thumbprint);
        Reloaded?.Invoke(certificate);
    }

    /// <summary>A certificate and its handshake context.</summary>
    private sealed record Loaded(X509Certificate2 Certificate, SslStreamCertificateContext Context);
}
