/// One request as it goes on the wire: the method, the path after the base
/// URL, headers and the JSON body. The authentication code covers the body
/// bytes, so they are sent exactly as signed.
public struct TransportRequest: Sendable, Equatable {
    /// The HTTP method (`POST` for every endpoint of this API).
    public var method: String
    /// The path, for example `/pa/v3/activation/status`.
    public var path: String
    /// Header names and values (names as written; look-ups ignore case).
    public var headers: [String: String]
    /// The body bytes (public JSON).
    public var body: [UInt8]
    /// The `X-PowerAuth-Authorization` header as the transport that made this request already
    /// parsed it from ``headers`` (the reference server's router parses it once, for its access
    /// log and metrics too), or `nil` to parse it where it is needed. Never anything but the parse
    /// of that header's value. Not part of `==` (a cache of ``headers``, not a part of the request).
    package var parsedAuthorization: AuthorizationHeader?

    /// Creates a request.
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - path: the endpoint path.
    ///   - headers: the headers.
    ///   - body: the body bytes.
    public init(method: String = "POST", path: String, headers: [String: String] = [:], body: [UInt8]) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The value of a header, ignoring the case of its name.
    /// - Parameter name: the header name.
    /// - Returns: the value, or `nil`.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        // Transports usually store names lower-cased: one look-up, not a lower-cased copy of each.
        if let value = headers[wanted] { return value }
        return headers.first { $0.key.lowercased() == wanted }?.value
    }

    /// Equal method, path, headers and body.
    public static func == (lhs: TransportRequest, rhs: TransportRequest) -> Bool {
        lhs.method == rhs.method && lhs.path == rhs.path && lhs.headers == rhs.headers && lhs.body == rhs.body
    }
}

/// One response: the HTTP status and the JSON body.
public struct TransportResponse: Sendable, Equatable {
    /// The HTTP status code.
    public var statusCode: Int
    /// The body bytes (public JSON).
    public var body: [UInt8]

    /// Creates a response.
    /// - Parameters:
    ///   - statusCode: the HTTP status.
    ///   - body: the body bytes.
    public init(statusCode: Int, body: [UInt8]) {
        self.statusCode = statusCode
        self.body = body
    }
}

/// Why a transport delivered no answer. Every HTTP answer, whatever its status, is a
/// ``TransportResponse``, not an error.
public enum TransportError: Error, Equatable, Sendable {
    /// The request did not reach the server or no answer came back (no connection,
    /// a time-out, a server failure with HTTP 5xx); `reason` says which, never a
    /// secret. The client never removes an activation because of it.
    case network(reason: String)
    /// The task was cancelled before an answer came back.
    case cancelled
    /// The server's TLS could not be trusted or spoken (an untrusted, expired or misnamed
    /// certificate, a pinned key that does not match, a failed handshake); `reason` says which.
    /// Not a network outage: retrying will not help until the server or the settings change.
    /// The client never removes an activation or counts an attempt because of it.
    case tls(reason: String)
    /// The transport cannot send with its settings (a base URL or TLS strategy it
    /// cannot use); `reason` names the setting.
    case invalidConfiguration(reason: String)
}

extension TransportError: CustomStringConvertible {
    /// What went wrong, in a sentence fragment a person can act on; it never names a secret.
    public var description: String {
        switch self {
        case .network(let reason): "the server cannot be reached: \(reason)"
        case .cancelled: "the request was cancelled"
        case .tls(let reason): "the server is not trusted: \(reason)"
        case .invalidConfiguration(let reason): "the transport cannot be used as configured: \(reason)"
        }
    }
}

/// How the client reaches the server. An in-process implementation calls
/// the server logic directly; an HTTP one sends the same bytes over the
/// network. Implementations report a failure to deliver as
/// ``TransportError/network(reason:)`` and return every HTTP answer,
/// whatever its status, as a ``TransportResponse``.
public protocol ActivationTransport: Sendable {
    /// Sends a request and waits for the answer.
    /// - Parameters:
    ///   - request: the request.
    ///   - timeout: how long to wait at most.
    /// - Returns: the server's answer.
    /// - Throws: ``TransportError/network(reason:)``, ``TransportError/cancelled``,
    ///   ``TransportError/invalidConfiguration(reason:)``.
    func send(_ request: TransportRequest, timeout: Duration) async throws(TransportError) -> TransportResponse
}
