import PowerAuthProtocol

/// A hook that sees, and may change, every request before it is sent (request
/// interceptors): add a header, log the path. It must not log
/// the authorization header's value if the log is kept.
public protocol ActivationRequestInterceptor: Sendable {
    /// Adjusts the request.
    /// - Parameter request: the request about to be sent.
    func process(_ request: inout TransportRequest)
}

/// How the transport validates the server's TLS certificate.
public enum TLSValidationStrategy: Sendable, Equatable {
    /// The platform's default validation.
    case system
    /// Accept any certificate. For development servers only: it removes the
    /// protection against an attacker on the network.
    case noValidation
    /// Accept only certificates whose SubjectPublicKeyInfo SHA-256 is listed.
    case pinnedPublicKeys([[UInt8]])
}

/// The HTTP client settings (cf. `PowerAuthClientConfiguration`).
public struct ActivationClientConfiguration: Sendable {
    /// The default request time-out.
    public static let defaultRequestTimeout: Duration = .seconds(20)
    /// The default `User-Agent`.
    public static let defaultUserAgent = "SecurePIN-Activation/1 (Linux)"

    /// The request time-out, default 20 s.
    public var requestTimeout: Duration
    /// Interceptors run in order on every request.
    public var requestInterceptors: [any ActivationRequestInterceptor]
    /// The `User-Agent` header; `nil` leaves it to the platform.
    public var userAgent: String?
    /// The TLS validation strategy, default ``TLSValidationStrategy/system``.
    public var tlsValidation: TLSValidationStrategy

    /// Creates the settings.
    /// - Parameters:
    ///   - requestTimeout: default 20 s.
    ///   - requestInterceptors: default none.
    ///   - userAgent: default ``defaultUserAgent``.
    ///   - tlsValidation: default ``TLSValidationStrategy/system``.
    public init(
        requestTimeout: Duration = ActivationClientConfiguration.defaultRequestTimeout,
        requestInterceptors: [any ActivationRequestInterceptor] = [],
        userAgent: String? = ActivationClientConfiguration.defaultUserAgent,
        tlsValidation: TLSValidationStrategy = .system
    ) {
        self.requestTimeout = requestTimeout
        self.requestInterceptors = requestInterceptors
        self.userAgent = userAgent
        self.tlsValidation = tlsValidation
    }
}
