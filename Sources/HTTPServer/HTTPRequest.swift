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
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
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
