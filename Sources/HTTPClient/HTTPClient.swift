internal import CHTTPClientShim
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small HTTP client over libcurl for talking to the activation server.
///
/// Requests carry the configured user agent and timeout, pass through the interceptors, and
/// never use cookies, a cache or redirects. TLS is checked as ``Configuration/tlsValidation``
/// says (TLS 1.2 or later). A 4xx answer is returned as status and body; 5xx, refused
/// connections, timeouts and TLS failures are typed errors. Plain `http` goes to loopback hosts
/// only unless ``Configuration/allowInsecureHTTP`` is set. Nothing is logged.
///
/// Each request runs libcurl's blocking `curl_easy_perform` on a thread of its own, so no thread
/// of Swift's cooperative pool waits for the network. libcurl honours the usual proxy variables
/// (`https_proxy`, `no_proxy`); an https request through a proxy is tunnelled and validated end
/// to end.
///
/// ```swift
/// let client = try HTTPClient(configuration: .init(baseURL: URL(string: "https://api.example.com")!))
/// let (status, body) = try await client.post(path: "/pa/v3/activation/status", body: json)
/// ```
public final class HTTPClient: Sendable {
    /// The configuration given at creation.
    public let configuration: Configuration
    /// `sha256//BASE64;…` for libcurl, when keys are pinned.
    private let pinnedKeys: String?
    /// The CA file to trust instead of the system store.
    private let caFile: String?
    /// The largest response body accepted.
    static let maximumResponseBytes = 8 << 20

    /// Creates a client.
    /// - Parameter configuration: Base URL, timeout, user agent, interceptors, TLS strategy.
    /// - Throws: ``HTTPClientError/invalidConfiguration(_:)`` for a base URL that is not http or
    ///   https, plain http to a non-loopback host without ``Configuration/allowInsecureHTTP``, an
    ///   empty pin list or a pin that is not 32 bytes, a timeout that is not positive;
    ///   ``HTTPClientError/tls(_:)`` with ``HTTPClientError/TLSFailure/unusableCAFile(_:)`` for a
    ///   CA file that cannot be read or holds no PEM certificate. Nothing is sent.
    public init(configuration: Configuration) throws(HTTPClientError) {
        let scheme = configuration.baseURL.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw .invalidConfiguration("the base URL must be http or https")
        }
        let host = configuration.baseURL.host ?? ""
        guard !host.isEmpty else { throw .invalidConfiguration("the base URL has no host") }
        if scheme == "http" && !configuration.allowInsecureHTTP && !Self.isLoopback(host) {
            throw .invalidConfiguration(
                "plain http to \(host), which is not loopback, is refused: use https (or allow insecure http "
                    + "for a network you control)")
        }
        guard configuration.timeout > .zero else { throw .invalidConfiguration("the timeout must be positive") }
        var pins: String?
        var ca: String?
        switch configuration.tlsValidation {
        case .system, .noValidation: break
        case .customCA(let file):
            try Self.checkCAFile(file)
            ca = file
        case .pinnedPublicKeys(let keys, let file):
            guard !keys.isEmpty else { throw .invalidConfiguration("no public key to pin") }
            guard keys.allSatisfy({ $0.count == 32 }) else {
                throw .invalidConfiguration("a pinned key must be the 32-byte SHA-256 of a SubjectPublicKeyInfo")
            }
            pins = keys.map { "sha256//" + $0.base64EncodedString() }.joined(separator: ";")
            if let file {
                try Self.checkCAFile(file)
                ca = file
            }
        }
        self.configuration = configuration
        self.pinnedKeys = pins
        self.caFile = ca
        if configuration.tlsValidation == .noValidation {
            FileHandle.standardError.write(
                Data(
                    ("warning: HTTP client for \(host): TLS certificate validation is off (noValidation); any "
                        + "certificate is accepted, from anyone on the path: for development only\n").utf8))
        }
    }

    /// Sends a POST request.
    /// - Parameters:
    ///   - path: The path, appended to the base URL (for example `/pa/v3/activation/create`).
    ///   - body: The request body.
    ///   - headers: Extra header fields (`Content-Type` defaults to `application/json`).
    /// - Returns: The status (1xx–4xx) and the response body.
    /// - Throws: ``HTTPClientError``: `.serverError` for 5xx, `.connectionRefused`, `.timeout`,
    ///   `.tls`, `.cancelled`, `.invalidResponse`, `.invalidConfiguration` for a path that makes
    ///   no URL or a header with a line break, `.other` for the rest.
    public func post(path: String, body: Data, headers: [String: String] = [:]) async throws(HTTPClientError) -> (
        status: Int, body: Data
    ) {
        try await send(method: "POST", path: path, body: body, headers: headers)
    }

    /// Sends a request with any method.
    /// - Parameters:
    ///   - method: The method, for example `GET` or `DELETE`.
    ///   - path: The path, appended to the base URL.
    ///   - body: The body, or nil for none.
    ///   - headers: Extra header fields.
    /// - Returns: The status (1xx–4xx) and the response body.
    /// - Throws: ``HTTPClientError`` as for ``post(path:body:headers:)``.
    public func send(method: String, path: String, body: Data? = nil, headers: [String: String] = [:])
        async throws(HTTPClientError) -> (status: Int, body: Data)
    {
        let exchange = try prepare(method: method, path: path, body: body, headers: headers)
        guard !Task.isCancelled else { throw .cancelled }
        let (status, data) = try await exchange.run()
        guard status < 500 else { throw .serverError(status: status) }
        return (status, data)
    }

    /// ``send(method:path:body:headers:)`` for synchronous callers (the vault's server binding):
    /// blocks the calling thread until the exchange ends or times out. It needs no other thread,
    /// so it cannot starve Swift's cooperative pool, but it holds the thread it runs on.
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The path, appended to the base URL.
    ///   - body: The body, or nil for none.
    ///   - headers: Extra header fields.
    /// - Returns: The status (1xx–4xx) and the response body.
    /// - Throws: ``HTTPClientError`` as for ``post(path:body:headers:)`` (never `.cancelled`).
    public func sendWaiting(method: String, path: String, body: Data? = nil, headers: [String: String] = [:])
        throws(HTTPClientError) -> (status: Int, body: Data)
    {
        let exchange = try prepare(method: method, path: path, body: body, headers: headers)
        let (status, data) = try exchange.perform(cancel: nil).get()
        guard status < 500 else { throw .serverError(status: status) }
        return (status, data)
    }

    /// The request with the client's headers, after the interceptors, as libcurl takes it.
    private func prepare(method: String, path: String, body: Data?, headers: [String: String])
        throws(HTTPClientError) -> Exchange
    {
        var request = try makeRequest(method: method, path: path, body: body, headers: headers)
        for interceptor in configuration.interceptors { interceptor.intercept(&request) }
        guard let url = request.url?.absoluteString else { throw .invalidConfiguration("the request has no URL") }
        return Exchange(
            url: url, method: request.httpMethod ?? method,
            headers: (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" },
            body: request.httpBody, timeoutMilliseconds: Self.milliseconds(configuration.timeout),
            verify: configuration.tlsValidation != .noValidation, caFile: caFile, pinnedKeys: pinnedKeys)
    }

    private func makeRequest(method: String, path: String, body: Data?, headers: [String: String])
        throws(HTTPClientError) -> URLRequest
    {
        var base = configuration.baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let suffix = path.hasPrefix("/") ? path : "/" + path
        guard let url = URL(string: base + suffix) else {
            throw .invalidConfiguration("the path does not form a valid URL")
        }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData)
        request.httpMethod = method
        if let agent = configuration.userAgent { request.setValue(agent, forHTTPHeaderField: "User-Agent") }
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }

    /// Whether `host` is a loopback host, the only kind plain http goes to without
    /// ``Configuration/allowInsecureHTTP``.
    /// - Parameter host: a URL's host.
    /// - Returns: true for `localhost`, `127.0.0.0/8` or `::1` (with or without brackets).
    public static func isLoopback(_ host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare.lowercased() == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Checks a TLS strategy as ``init(configuration:)`` does (pin lengths, the CA file), without
    /// making a client: for a caller that wants bad settings refused before anything else happens.
    /// - Parameter validation: the strategy.
    /// - Throws: ``HTTPClientError/invalidConfiguration(_:)`` or ``HTTPClientError/tls(_:)``.
    public static func check(_ validation: TLSValidation) throws(HTTPClientError) {
        switch validation {
        case .system, .noValidation: return
        case .customCA(let file): try checkCAFile(file)
        case .pinnedPublicKeys(let keys, let file):
            guard !keys.isEmpty else { throw .invalidConfiguration("no public key to pin") }
            guard keys.allSatisfy({ $0.count == 32 }) else {
                throw .invalidConfiguration("a pinned key must be the 32-byte SHA-256 of a SubjectPublicKeyInfo")
            }
            if let file { try checkCAFile(file) }
        }
    }

    /// A readable file with at least one PEM certificate.
    private static func checkCAFile(_ file: String) throws(HTTPClientError) {
        guard let contents = FileManager.default.contents(atPath: file),
            contents.range(of: Data("-----BEGIN CERTIFICATE-----".utf8)) != nil
        else { throw .tls(.unusableCAFile(file)) }
    }

    /// Whole milliseconds, rounded up, at least 1.
    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let total = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(max(1, min(total, Int64(Int32.max))))
    }
}

/// A flag libcurl's progress callback reads while a request runs; set on task cancellation.
private final class CancelFlag: @unchecked Sendable {
    // Written only through spc_curl_cancel (an atomic store) and read only by the C side (an
    // atomic load): never touched from Swift directly.
    let pointer = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    init() { pointer.initialize(to: 0) }
    deinit { pointer.deallocate() }
    func set() { spc_curl_cancel(pointer) }
}

/// One request as libcurl takes it.
private struct Exchange: Sendable {
    let url: String
    let method: String
    let headers: [String]
    let body: Data?
    let timeoutMilliseconds: Int
    let verify: Bool
    let caFile: String?
    let pinnedKeys: String?

    /// Runs on a thread of its own; cancelling the task makes libcurl abort at its next progress
    /// call (within about a second).
    func run() async throws(HTTPClientError) -> (Int, Data) {
        let flag = CancelFlag()
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<(Int, Data), HTTPClientError>, Never>) in
                Thread { continuation.resume(returning: self.perform(cancel: flag)) }.start()
            }
        } onCancel: {
            flag.set()
        }
        return try outcome.get()
    }

    func perform(cancel: CancelFlag?) -> Result<(Int, Data), HTTPClientError> {
        let lines = headers.map { strdup($0) }
        // A header may carry a credential (the back office's admin token): the copies are wiped.
        defer {
            for line in lines {
                if let line { explicit_bzero(line, strlen(line)) }
                free(line)
            }
        }
        guard lines.allSatisfy({ $0 != nil }) else { return .failure(.other("out of memory")) }
        var response = spc_curl_response()
        defer { spc_curl_response_free(&response) }
        let code: Int32 = url.withCString { url in
            method.withCString { method in
                withOptionalCString(caFile) { ca in
                    withOptionalCString(pinnedKeys) { pins in
                        lines.map { UnsafePointer($0) }.withUnsafeBufferPointer { headerLines in
                            (body ?? Data()).withUnsafeBytes { bytes in
                                var request = spc_curl_request()
                                request.url = url
                                request.method = method
                                request.headers = headerLines.baseAddress
                                request.header_count = headerLines.count
                                request.body = bytes.bindMemory(to: UInt8.self).baseAddress
                                request.body_length = bytes.count
                                request.has_body = body == nil ? 0 : 1
                                request.timeout_ms = timeoutMilliseconds
                                request.verify = verify ? 1 : 0
                                request.ca_file = ca
                                request.pinned_keys = pins
                                request.max_response_bytes = HTTPClient.maximumResponseBytes
                                request.cancel = cancel.map { UnsafePointer($0.pointer) }
                                return spc_curl_perform(&request, &response)
                            }
                        }
                    }
                }
            }
        }
        let message = withUnsafeBytes(of: response.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        switch code {
        case SPC_CURL_OK:
            let data = response.body_length > 0 ? Data(bytes: response.body, count: response.body_length) : Data()
            return .success((Int(response.status), data))
        case SPC_CURL_E_CONNECT: return .failure(.connectionRefused)
        case SPC_CURL_E_RESOLVE: return .failure(.other("the server's host name does not resolve"))
        case SPC_CURL_E_TIMEOUT: return .failure(.timeout)
        case SPC_CURL_E_CANCELLED: return .failure(.cancelled)
        case SPC_CURL_E_TLS_CERTIFICATE: return .failure(.tls(.untrustedCertificate(Self.reason(message))))
        case SPC_CURL_E_TLS_PIN: return .failure(.tls(.pinnedKeyMismatch))
        case SPC_CURL_E_CA_FILE: return .failure(.tls(.unusableCAFile(caFile ?? "")))
        case SPC_CURL_E_TLS: return .failure(.tls(.handshakeFailed(Self.reason(message))))
        case SPC_CURL_E_TOO_LARGE, SPC_CURL_E_PROTOCOL: return .failure(.invalidResponse)
        case SPC_CURL_E_INVALID: return .failure(.invalidConfiguration("the method or a header holds a line break"))
        case SPC_CURL_E_MEMORY: return .failure(.other("out of memory"))
        default: return .failure(.other(message.isEmpty ? "libcurl error \(response.curl_code)" : message))
        }
    }

    /// libcurl's message without its `SSL certificate problem: ` prefix.
    private static func reason(_ message: String) -> String {
        let prefix = "SSL certificate problem: "
        return message.hasPrefix(prefix) ? String(message.dropFirst(prefix.count)) : message
    }
}

/// Calls `body` with a C string for `text`, or NULL.
private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
