import Foundation
import SecureCore

/// One complete HTTP request as the server received it.
///
/// The description shows method, path, header names and the body's size, never a
/// header value or a body byte.
public struct HTTPRequest: Sendable {
    /// The method, for example `POST`.
    public var method: String
    /// The path without the query string, for example `/pa/v3/activation/create`.
    public var path: String
    /// Every header field in the order received.
    public var headers: [HTTPHeader]
    /// The body, at most ``HTTPServer/Configuration/maximumBodyBytes`` long.
    public var body: Data
    /// The values of the headers named in ``HTTPServer/Configuration/secretHeaders``, in secure
    /// memory, keyed by the lower-cased name; the first occurrence of a name wins, and an empty
    /// value is absent.
    public var secretHeaders: [String: SecureBytes] = [:]
    /// The connection's peer address as text (`127.0.0.1`, `::1`); behind a proxy, the proxy's.
    /// `nil` when unknown (a request built by hand).
    public var peerAddress: String?
    /// The client's IP address as text: ``peerAddress``, except for a connection from one of
    /// ``HTTPServer/Configuration/trustedProxies``, where it is the address that proxy vouches for
    /// in `X-Forwarded-For`. What per-client limits and logs should use. `nil` when unknown.
    public var clientAddress: String?

    /// Creates a request (the server does; tests of handlers may too).
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The path without query string.
    ///   - headers: The header fields.
    ///   - body: The body.
    public init(method: String, path: String, headers: [HTTPHeader] = [], body: Data = Data()) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// The value of the first header field with this name, compared case-insensitively.
    /// - Parameter name: The field name, for example ``HTTPHeader/powerAuthAuthorization``.
    /// - Returns: The value, or nil when the request has no such field.
    public func header(_ name: String) -> String? {
        headers.first { Self.sameName($0.name, name) }?.value
    }

    /// The values of every header field with this name, in the order received.
    /// - Parameter name: The field name, compared case-insensitively.
    /// - Returns: The values; empty when the request has none.
    public func headers(_ name: String) -> [String] {
        headers.filter { Self.sameName($0.name, name) }.map(\.value)
    }

    /// Field names compare without regard to ASCII case (they are tokens: RFC 9110 §5.1); a byte
    /// compare, not Foundation's Unicode one, because it runs several times on every request.
    static func sameName(_ a: String, _ b: String) -> Bool {
        func lower(_ c: UInt8) -> UInt8 { (0x41...0x5A).contains(c) ? c | 0x20 : c }
        return a.utf8.count == b.utf8.count && zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }
}

// MARK: - CustomStringConvertible

extension HTTPRequest: CustomStringConvertible {
    /// Method, path, header names and body size; no values.
    public var description: String {
        let names = headers.map(\.name) + secretHeaders.keys.sorted()
        return "\(method) \(path) [\(names.joined(separator: ", "))] \(body.count)-byte body"
    }
}
