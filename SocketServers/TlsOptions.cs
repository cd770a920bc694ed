using System.Net.Security;
using System.Security.Cryptography.X509Certificates;

namespace SocketServers;

/// <summary>TLS settings of a <see cref="TcpServer"/> (<see cref="TcpServerOptions.Tls"/>): TLS is on once a certificate
/// source is set, <see cref="CertificatePath"/>, <see cref="ServerCertificate"/> or <see cref="ServerCertificateSelector"/>.
/// Protocol versions and cipher suites are the system's defaults.</summary>
/// <remarks>Certificate files are loaded when the server starts, which throws if they cannot be, and reloaded whenever
/// they change on disk; a change that does not load keeps the certificate in use. Not thread-safe.</remarks>
public sealed class TlsOptions
{
    /// <summary>The largest accepted <see cref="MaxHandshakesInFlight"/>: 1,000,000.</summary>
    public const int MaxHandshakesLimit = 1_000_000;

    // Enough handshakes in flight to keep a core busy while clients make their round trips; more only queue for the
    // CPU (README: TLS).
    private int _maxHandshakesInFlight = Environment.ProcessorCount * 100;
    private ClientCertificateMode _clientCertificateMode;

    /// <summary>The server's certificate file: PEM (the certificate then its chain, with the key too when
    /// <see cref="KeyPath"/> is not set) or PKCS#12 (.pfx, without a password). <see langword="null"/> (the default) for
    /// none.</summary>
    public string? CertificatePath { get; set; }

    /// <summary>The PEM file of <see cref="CertificatePath"/>'s private key; <see langword="null"/> when the key is in that
    /// file.</summary>
    public string? KeyPath { get; set; }

    /// <summary>The server's certificate, with its private key; used when no file is set, and for host names
    /// <see cref="ServerCertificateSelector"/> returns none for.</summary>
    public X509Certificate2? ServerCertificate { get; set; }

    /// <summary>Picks the certificate for the host name a client asks for (SNI; <see langword="null"/> when it asks for none);
    /// returning <see langword="null"/> falls back to the file's certificate or <see cref="ServerCertificate"/>. Called once per handshake, on the
    /// handshake's thread; it must not block.</summary>
    public Func<string?, X509Certificate2?>? ServerCertificateSelector { get; set; }

    /// <summary>Whether clients are asked for a certificate; <see cref="ClientCertificateMode.NoCertificate"/> by default.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is not a defined mode.</exception>
    public ClientCertificateMode ClientCertificateMode
    {
        get => _clientCertificateMode;
        set
        {
            if (!Enum.IsDefined(value))
            {
                throw new ArgumentOutOfRangeException(nameof(ClientCertificateMode), value, "Not a client certificate mode.");
            }

            _clientCertificateMode = value;
        }
    }

    /// <summary>Decides whether a client's certificate is accepted, given the chain and the system's verdict; by default
    /// it is when the system finds no error.</summary>
    public Func<X509Certificate2, X509Chain?, SslPolicyErrors, bool>? ClientCertificateValidation { get; set; }

    /// <summary>The most handshakes (with the PROXY header before them) under way at once, 1 to
    /// <see cref="MaxHandshakesLimit"/>; 100 per processor by default. Further clients wait in the listen backlog, as they
    /// do at <see cref="TcpServerOptions.MaxConnections"/>, so a flood of handshakes cannot take every core.</summary>
    /// <exception cref="ArgumentOutOfRangeException">The value is out of range.</exception>
    public int MaxHandshakesInFlight
    {
        get => _maxHandshakesInFlight;
        set
        {
            ArgumentOutOfRangeException.ThrowIfLessThan(value, 1, nameof(MaxHandshakesInFlight));
            ArgumentOutOfRangeException.ThrowIfGreaterThan(value, MaxHandshakesLimit, nameof(MaxHandshakesInFlight));
            _maxHandshakesInFlight = value;
        }
    }

    /// <summary>Gets whether TLS is on: a certificate source is set.</summary>
    public bool IsEnabled => CertificatePath is not null || ServerCertificate is not null || ServerCertificateSelector is not null;
}
