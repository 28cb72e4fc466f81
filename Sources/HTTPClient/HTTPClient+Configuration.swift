import Foundation

extension HTTPClient {
    /// The version this client reports in its default user agent.
    public static let version = "0.1.0"

    /// `SecurePIN/<version> (Linux)` (or the platform's name elsewhere).
    public static let defaultUserAgent: String = {
        #if os(Linux)
            "SecurePIN/\(version) (Linux)"
        #elseif os(macOS)
            "SecurePIN/\(version) (macOS)"
        #else
            "SecurePIN/\(version)"
        #endif
    }()

    /// How the server's TLS certificate is checked.
    public enum TLSValidation: Sendable, Equatable {
        /// The platform's trust store and host-name check (the default, and the only choice
        /// for anything but a test server).
        case system
        /// **Dangerous:** accept any certificate, for a loopback test server with a self-signed
        /// certificate only: the base URL's host must be `127.0.0.1`, `::1` or `localhost`.
        ///
        /// Limitation: on Linux, Foundation's URLSession (libcurl underneath) never passes
        /// server-trust challenges to a session delegate and has no per-session switch, so this
        /// strategy cannot be honoured there for `https`: such a client is refused with
        /// ``HTTPClientError/invalidConfiguration(_:)`` rather than silently validating (or
        /// silently not). With an `http` loopback URL there is no certificate and nothing changes.
        case noValidation
    }

    /// Where requests go and how they are sent.
    public struct Configuration: Sendable {
        /// The server's base URL; request paths are appended to it.
        public var baseURL: URL
        /// Longest wait for the response (default 20 s), applied per request.
        public var timeout: Duration
        /// The `User-Agent` header value.
        public var userAgent: String
        /// Run in order on every request, after the client's own headers are set.
        public var interceptors: [any HTTPRequestInterceptor]
        /// How the server certificate is checked.
        public var tlsValidation: TLSValidation

        /// Creates a configuration.
        /// - Parameters:
        ///   - baseURL: The server's base URL (http or https).
        ///   - timeout: Per-request timeout (default 20 s).
        ///   - userAgent: User agent (default ``HTTPClient/defaultUserAgent``).
        ///   - interceptors: Request interceptors (default none).
        ///   - tlsValidation: Certificate checking (default ``TLSValidation/system``).
        public init(
            baseURL: URL, timeout: Duration = .seconds(20), userAgent: String = HTTPClient.defaultUserAgent,
            interceptors: [any HTTPRequestInterceptor] = [], tlsValidation: TLSValidation = .system
        ) {
            self.baseURL = baseURL
            self.timeout = timeout
            self.userAgent = userAgent
            self.interceptors = interceptors
            self.tlsValidation = tlsValidation
        }
    }
}
