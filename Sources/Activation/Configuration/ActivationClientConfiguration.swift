import PowerAuthProtocol

/// A hook that sees, and may change, every request before it is sent (request
/// interceptors): add a header, log the path. It must not log
/// the authorization header's value if the log is kept.
public protocol ActivationRequestInterceptor: Sendable {
    /// Adjusts the request.
    /// - Parameter request: the request about to be sent.
    func process(_ request: inout TransportRequest)
}

/// How the transport validates the server's TLS certificate (the seed's `sslValidationStrategy`).
public enum TLSValidationStrategy: Sendable, Equatable {
    /// The system's CA store and the host-name check.
    case system
    /// Trust the CA certificates of this PEM file instead of the system store (a private CA).
    case customCA(file: String)
    /// Normal validation (the system store, or the `customCA` file when given) and, in addition,
    /// the certificate's public key must be one of these 32-byte SHA-256 digests of a DER
    /// SubjectPublicKeyInfo.
    case pinnedPublicKeys([[UInt8]], customCA: String? = nil)
    /// Accept any certificate. For development servers only: it removes the
    /// protection against an attacker on the network, and every client made with it warns on
    /// standard error.
    case noValidation
}

/// The HTTP client settings (cf. `PowerAuthClientConfiguration`).
public struct ActivationClientConfiguration: Sendable {
    /// The default request time-out.
    public static let defaultRequestTimeout: Duration = .seconds(20)
    /// The library's version in the default `User-Agent`.
    public static let libraryVersion = "0.1.0"
    /// The default `User-Agent`: the running executable's file name, then this library,
    /// `APP SecurePIN/0.1.0 (Linux)`. An application sets its own name and version with
    /// `HTTPClient.userAgent(application:version:)` (the same form) or any string; `nil` sends no
    /// `User-Agent` header at all.
    public static let defaultUserAgent: String = {
        let name = CommandLine.arguments.first?.split(separator: "/").last.map(String.init) ?? ""
        let allowed = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let token = String(name.map { allowed.contains($0) ? $0 : "-" })
        #if os(Linux)
            return "\(token.isEmpty ? "app" : token) SecurePIN/\(libraryVersion) (Linux)"
        #else
            return "\(token.isEmpty ? "app" : token) SecurePIN/\(libraryVersion)"
        #endif
    }()

    /// The request time-out, default 20 s.
    public var requestTimeout: Duration
    /// Interceptors run in order on every request.
    public var requestInterceptors: [any ActivationRequestInterceptor]
    /// The `User-Agent` header; `nil` leaves it to the platform.
    public var userAgent: String?
    /// The TLS validation strategy, default ``TLSValidationStrategy/system``.
    public var tlsValidation: TLSValidationStrategy
    /// Allows plain `http://` to a host that is not loopback (default false: refused when the
    /// transport is made).
    public var allowInsecureHTTP: Bool = false

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
