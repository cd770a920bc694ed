using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using Microsoft.Extensions.Logging;

namespace SocketServers.Internal;

/// <summary>
/// The server side of a TLS handshake, with the certificate sources and client-certificate rules of
/// <see cref="TlsOptions"/>, copied when made. The certificate files load at <see cref="Start"/>.
/// </summary>
/// <remarks>The <see cref="SslStream"/> sits on a <see cref="NetworkStream"/> that does not own the socket: the
/// connection owns and closes the socket, as it does without TLS, and disposing the stream frees TLS's state alone.</remarks>
internal sealed class TlsHandshake : IDisposable
{
    private readonly string? _certificatePath;
    private readonly string? _keyPath;
    private readonly X509Certificate2? _certificate;
    private readonly Func<string?, X509Certificate2?>? _selector;
    private readonly ClientCertificateMode _clientCertificateMode;
    private readonly Func<X509Certificate2, X509Chain?, SslPolicyErrors, bool>? _clientCertificateValidation;
    private readonly ILogger _logger;

    // The certificate files, once started; null without them.
    private ServerCertificateFiles? _files;

    public TlsHandshake(TlsOptions options, ILogger logger)
    {
        _certificatePath = options.CertificatePath;
        _keyPath = options.KeyPath;
        _certificate = options.ServerCertificate;
        _selector = options.ServerCertificateSelector;
        _clientCertificateMode = options.ClientCertificateMode;
        _clientCertificateValidation = options.ClientCertificateValidation;
        _logger = logger;
    }

    /// <summary>Gets the certificate files, once started; <see langword="null"/> without them.</summary>
    public ServerCertificateFiles? Files => _files;

    /// <summary>Loads the certificate files, if any, and checks that there is a certificate to serve.</summary>
    /// <exception cref="InvalidOperationException">The settings conflict, or the files do not load; one line that names the file.</exception>
    public void Start()
    {
        if (_certificatePath is not null && _certificate is not null)
        {
            throw new InvalidOperationException("TLS has both a certificate file (CertificatePath) and a ServerCertificate; set one.");
        }

        if (_keyPath is not null && _certificatePath is null)
        {
            throw new InvalidOperationException($"TLS has a key file ('{_keyPath}') but no certificate file (CertificatePath).");
        }

        if (_certificate is { HasPrivateKey: false })
        {
            throw new InvalidOperationException($"The TLS ServerCertificate ({_certificate.Subject}) has no private key.");
        }

        _files?.Dispose();
        _files = _certificatePath is null ? null : new ServerCertificateFiles(_certificatePath, _keyPath, _logger);
    }

    /// <summary>Runs the handshake on <paramref name="socket"/>.</summary>
    /// <returns>The authenticated stream; the caller owns it.</returns>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled.</exception>
    /// <exception cref="System.Security.Authentication.AuthenticationException">The handshake failed.</exception>
    /// <exception cref="IOException">The client closed or reset the connection.</exception>
    public async Task<SslStream> AuthenticateAsync(Socket socket, CancellationToken cancellationToken)
    {
        var stream = new SslStream(new NetworkStream(socket, ownsSocket: false), leaveInnerStreamOpen: false);
        try
        {
            await stream.AuthenticateAsServerAsync(ServerOptions(), cancellationToken).ConfigureAwait(false);
            return stream;
        }
        catch
        {
            await stream.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <inheritdoc/>
    public void Dispose() => _files?.Dispose();

    private SslServerAuthenticationOptions ServerOptions()
    {
        var options = new SslServerAuthenticationOptions
        {
            ClientCertificateRequired = _clientCertificateMode != ClientCertificateMode.NoCertificate,
            CertificateRevocationCheckMode = X509RevocationMode.NoCheck,
        };
        if (_clientCertificateMode != ClientCertificateMode.NoCertificate)
        {
            options.RemoteCertificateValidationCallback = ValidateClientCertificate;
        }

        if (_selector is not null)
        {
            options.ServerCertificateSelectionCallback = (_, hostName) => _selector(hostName) ?? _files?.Certificate ?? _certificate!;
        }
        else if (_files is { } files)
        {
            options.ServerCertificateContext = files.Context;
        }
        else
        {
            options.ServerCertificate = _certificate;
        }

        return options;
    }

    private bool ValidateClientCertificate(object sender, X509Certificate? certificate, X509Chain? chain, SslPolicyErrors errors)
    {
        if (certificate is null)
        {
            return _clientCertificateMode == ClientCertificateMode.AllowCertificate;
        }

        return _clientCertificateValidation is { } validate
            ? validate(certificate as X509Certificate2 ?? new X509Certificate2(certificate), chain, errors)
            : errors == SslPolicyErrors.None;
    }
}
