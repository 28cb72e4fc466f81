internal import CHTTPClientShim
import Foundation

extension HTTPClient {
    /// The library's version, reported in the default user agent.
    public static let version = "0.1.0"

    /// libcurl's version text, for example `libcurl/7.88.1 OpenSSL/3.0.17 zlib/1.2.13 …`.
    public static var transportVersion: String { String(cString: spc_curl_version()) }

    /// The running executable's file name, as a user-agent product token (characters outside
    /// RFC 9110's `tchar` become `-`): the default application name in ``userAgent(application:version:)``.
    public static let executableName: String = {
        let path = CommandLine.arguments.first ?? ""
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        return name.isEmpty ? "app" : token(name)
    }()

    /// A user agent naming the application, then this library: `APP/VERSION SecurePIN/0.1.0 (Linux)`,
    /// or `APP SecurePIN/0.1.0 (Linux)` without a version.
    /// - Parameters:
    ///   - application: the application's name (default ``executableName``); made a product token.
    ///   - applicationVersion: the application's version, for example `"2.4.1"`; nil leaves it out.
    /// - Returns: the header value.
    public static func userAgent(application: String = executableName, version applicationVersion: String? = nil)
        -> String
    {
        let app = token(application) + (applicationVersion.map { "/" + token($0) } ?? "")
        #if os(Linux)
            return "\(app) SecurePIN/\(version) (Linux)"
        #elseif os(macOS)
            return "\(app) SecurePIN/\(version) (macOS)"
        #else
            return "\(app) SecurePIN/\(version)"
        #endif
    }

    /// ``userAgent(application:version:)`` with the executable's name and no application version.
    public static let defaultUserAgent: String = userAgent()

    /// `text` with every character outside RFC 9110's `tchar` replaced by `-` (never empty).
    static func token(_ text: String) -> String {
        let allowed = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        let mapped = String(text.map { allowed.contains($0) ? $0 : "-" })
        return mapped.isEmpty ? "-" : mapped
    }

    /// How the server's TLS certificate is checked (the seed's `sslValidationStrategy`).
    public enum TLSValidation: Sendable, Equatable {
        /// The system's CA store and the host-name check (the default).
        case system
        /// Trust the CA certificates in this PEM file instead of the system store (a private
        /// CA); the host name is checked as always.
        case customCA(file: String)
        /// Normal validation (the system store, or `customCA`'s file when given) and, in
        /// addition, the certificate's public key must be one of these: each the 32-byte
        /// SHA-256 of a SubjectPublicKeyInfo in DER (what `openssl x509 -pubkey | openssl pkey
        /// -pubin -outform der | openssl dgst -sha256 -binary` prints). Keep a backup key pinned.
        case pinnedPublicKeys([Data], customCA: String? = nil)
        /// **Development only:** https is accepted with any certificate, from anyone on the
        /// path. Never the default; every client created with it writes a warning to standard
        /// error.
        case noValidation
    }

    /// Where requests go and how they are sent.
    public struct Configuration: Sendable {
        /// The server's base URL; request paths are appended to it.
        public var baseURL: URL
        /// Longest time for a whole exchange, connecting included (default 20 s), per request.
        public var timeout: Duration
        /// The `User-Agent` header value; `nil` sends no `User-Agent` header at all (libcurl
        /// adds none of its own).
        public var userAgent: String?
        /// Run in order on every request, after the client's own headers are set.
        public var interceptors: [any HTTPRequestInterceptor]
        /// How the server certificate is checked.
        public var tlsValidation: TLSValidation
        /// Allows plain `http://` to a host that is not loopback (default false: such a base URL
        /// is refused). Only for a network you control: the PIN-derived codes would still be
        /// protected by PowerAuth's own layer, but nothing else would be.
        public var allowInsecureHTTP: Bool

        /// Creates a configuration.
        /// - Parameters:
        ///   - baseURL: The server's base URL (https, or http to a loopback host).
        ///   - timeout: Per-request timeout (default 20 s).
        ///   - userAgent: User agent (default ``HTTPClient/defaultUserAgent``; nil for none).
        ///   - interceptors: Request interceptors (default none).
        ///   - tlsValidation: Certificate checking (default ``TLSValidation/system``).
        ///   - allowInsecureHTTP: Allow plain http to a non-loopback host (default false).
        public init(
            baseURL: URL, timeout: Duration = .seconds(20), userAgent: String? = HTTPClient.defaultUserAgent,
            interceptors: [any HTTPRequestInterceptor] = [], tlsValidation: TLSValidation = .system,
            allowInsecureHTTP: Bool = false
        ) {
            self.baseURL = baseURL
            self.timeout = timeout
            self.userAgent = userAgent
            self.interceptors = interceptors
            self.tlsValidation = tlsValidation
            self.allowInsecureHTTP = allowInsecureHTTP
        }
    }
}
