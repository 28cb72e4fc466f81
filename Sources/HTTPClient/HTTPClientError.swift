/// Everything that can go wrong with a request. A 4xx answer is not an error: it comes back
/// as a status and body (PowerAuth's error body travels with a 400 or 401).
public enum HTTPClientError: Error, Equatable, Sendable {
    /// Nothing listens at the server's address (the connection was refused or the host is unreachable).
    case connectionRefused
    /// No response within ``HTTPClient/Configuration/timeout``.
    case timeout
    /// The server answered with a 5xx status.
    case serverError(status: Int)
    /// The answer was not an HTTP response, or the connection broke before it was complete.
    case invalidResponse
    /// The request was cancelled (its task was cancelled).
    case cancelled
    /// The server's TLS could not be trusted or spoken: its own case, never "unreachable".
    case tls(TLSFailure)
    /// The configuration cannot work (a base URL that is not https or loopback http, a pin
    /// that is not 32 bytes, a CA file without a certificate); the text says which.
    case invalidConfiguration(String)
    /// Any other failure, described by libcurl (no request data included).
    case other(String)

    /// Why TLS failed.
    public enum TLSFailure: Sendable, Equatable {
        /// The certificate did not validate: unknown CA, expired, or issued for another name.
        /// The text is OpenSSL's reason through libcurl, such as `certificate has expired`.
        case untrustedCertificate(String)
        /// The certificate validated, but its public key is none of the pinned ones.
        case pinnedKeyMismatch
        /// The CA file could not be used; the text names it.
        case unusableCAFile(String)
        /// The handshake failed otherwise (no common version or cipher, a peer not speaking
        /// TLS); the text is libcurl's.
        case handshakeFailed(String)
    }
}

extension HTTPClientError: CustomStringConvertible {
    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .connectionRefused: "the server cannot be reached: the connection was refused or the host is unreachable"
        case .timeout: "the server did not answer in time"
        case .serverError(let status): "the server failed with HTTP \(status)"
        case .invalidResponse: "the answer was not a complete HTTP response"
        case .cancelled: "the request was cancelled"
        case .tls(let failure): "TLS: \(failure)"
        case .invalidConfiguration(let reason): "the HTTP client cannot be used as configured: \(reason)"
        case .other(let reason): reason.isEmpty ? "the request failed" : "the request failed: \(reason)"
        }
    }
}

extension HTTPClientError.TLSFailure: CustomStringConvertible {
    /// A sentence a person can act on.
    public var description: String {
        switch self {
        case .untrustedCertificate(let reason): "the server's certificate is not trusted: \(reason)"
        case .pinnedKeyMismatch: "the server's public key is not one of the pinned keys"
        case .unusableCAFile(let file): "the CA file \(file) cannot be used"
        case .handshakeFailed(let reason): "the TLS handshake failed: \(reason)"
        }
    }
}
