namespace SocketServers;

/// <summary>Whether a TLS server asks its clients for a certificate (<see cref="TlsOptions.ClientCertificateMode"/>).</summary>
public enum ClientCertificateMode
{
    /// <summary>No certificate is asked for; the default.</summary>
    NoCertificate,

    /// <summary>A certificate is asked for; a client without one is served, one whose certificate fails validation is not.</summary>
    AllowCertificate,

    /// <summary>A client must present a certificate that passes validation.</summary>
    RequireCertificate,
}
