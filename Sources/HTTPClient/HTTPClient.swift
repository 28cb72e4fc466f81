import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A small HTTP client over URLSession for talking to the activation server.
///
/// Requests carry the configured user agent and timeout, pass through the interceptors,
/// and never use cookies or a cache. A 4xx answer is returned as status and body; 5xx,
/// refused connections and timeouts are typed errors. Nothing is logged.
///
/// ```swift
/// let client = try HTTPClient(configuration: .init(baseURL: URL(string: "http://127.0.0.1:8080")!))
/// let (status, body) = try await client.post(path: "/pa/v3/activation/status", body: json)
/// ```
public final class HTTPClient: Sendable {
    /// The configuration given at creation.
    public let configuration: Configuration
    private let session: URLSession

    /// Creates a client with its own ephemeral URL session.
    /// - Parameter configuration: Base URL, timeout, user agent, interceptors, TLS strategy.
    /// - Throws: ``HTTPClientError/invalidConfiguration(_:)`` for a base URL that is not http or
    ///   https, or a ``TLSValidation/noValidation`` strategy this platform or host cannot take.
    public init(configuration: Configuration) throws(HTTPClientError) {
        let scheme = configuration.baseURL.scheme?.lowercased()
        guard scheme == "http" || scheme == "https" else {
            throw .invalidConfiguration("the base URL must be http or https")
        }
        if configuration.tlsValidation == .noValidation {
            let host = configuration.baseURL.host?.lowercased() ?? ""
            guard ["127.0.0.1", "::1", "[::1]", "localhost"].contains(host) else {
                throw .invalidConfiguration("noValidation is allowed for a loopback host only")
            }
            #if !canImport(Darwin)
                guard scheme == "http" else {
                    throw .invalidConfiguration(
                        "noValidation cannot be honoured for https by URLSession on this platform")
                }
            #endif
        }
        guard configuration.timeout > .zero else { throw .invalidConfiguration("the timeout must be positive") }
        self.configuration = configuration
        let settings = URLSessionConfiguration.ephemeral
        // URLSession's own timers are only a backstop (see `exchange`), one second later.
        let backstop = Self.backstopSeconds(configuration.timeout)
        settings.timeoutIntervalForRequest = backstop
        settings.timeoutIntervalForResource = backstop
        settings.httpCookieAcceptPolicy = .never
        settings.httpShouldSetCookies = false
        settings.urlCache = nil
        settings.requestCachePolicy = .reloadIgnoringLocalCacheData
        self.session = URLSession(configuration: settings)
    }

    deinit { session.invalidateAndCancel() }

    /// Sends a POST request.
    /// - Parameters:
    ///   - path: The path, appended to the base URL (for example `/pa/v3/activation/create`).
    ///   - body: The request body.
    ///   - headers: Extra header fields (`Content-Type` defaults to `application/json`).
    /// - Returns: The status (1xx–4xx) and the response body.
    /// - Throws: ``HTTPClientError``: `.serverError` for 5xx, `.connectionRefused`, `.timeout`,
    ///   `.cancelled`, `.invalidResponse`, `.invalidConfiguration` for a path that makes no URL,
    ///   `.other` for the rest.
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
        var request = try makeRequest(method: method, path: path, body: body, headers: headers)
        for interceptor in configuration.interceptors { interceptor.intercept(&request) }
        guard !Task.isCancelled else { throw .cancelled }
        let (data, response) = try await exchange(request)
        guard let http = response as? HTTPURLResponse else { throw .invalidResponse }
        guard http.statusCode < 500 else { throw .serverError(status: http.statusCode) }
        return (http.statusCode, data)
    }

    /// Sends the request, racing it against the configured timeout.
    ///
    /// The timeout is enforced here rather than by URLSession alone: swift-corelibs-foundation
    /// truncates `timeoutInterval` to whole seconds (`Int(timeout) * 1000` ms), so 0.3 s becomes an
    /// immediate timeout and 1.9 s becomes 1 s. URLSession's timers stay set, rounded up plus one
    /// second, as a backstop.
    private func exchange(_ request: URLRequest) async throws(HTTPClientError) -> (Data, URLResponse) {
        let session = self.session
        let timeout = configuration.timeout
        do {
            return try await withThrowingTaskGroup(of: (Data, URLResponse)?.self) { group in
                group.addTask { try await session.data(for: request) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let answer = first else { throw URLError(.timedOut) }
                return answer
            }
        } catch {
            throw Task.isCancelled ? .cancelled : Self.map(error)
        }
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
        request.timeoutInterval = Self.backstopSeconds(configuration.timeout)
        request.httpShouldHandleCookies = false
        request.setValue(configuration.userAgent, forHTTPHeaderField: "User-Agent")
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        return request
    }

    /// The one place URL loading errors become ``HTTPClientError``.
    static func map(_ error: any Error) -> HTTPClientError {
        if error is CancellationError { return .cancelled }
        guard let urlError = error as? URLError else { return .other(String(describing: type(of: error))) }
        switch urlError.code {
        case .timedOut: return .timeout
        case .cannotConnectToHost: return .connectionRefused
        case .cancelled: return .cancelled
        case .badServerResponse, .cannotParseResponse: return .invalidResponse
        default: return .other("URLError \(urlError.code.rawValue)")
        }
    }

    /// Whole seconds, rounded up, plus one.
    private static func backstopSeconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds + (attoseconds > 0 ? 1 : 0) + 1)
    }
}
