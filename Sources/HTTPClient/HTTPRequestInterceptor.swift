import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Adjusts every request before it is sent: adds headers (a signature, a trace id), never
/// reads a body to log it.
public protocol HTTPRequestInterceptor: Sendable {
    /// Changes the request in place.
    /// - Parameter request: The request about to be sent; its URL, method, body and headers are set.
    func intercept(_ request: inout URLRequest)
}

/// An interceptor that sets fixed header fields.
public struct HeaderInterceptor: HTTPRequestInterceptor {
    /// The fields to set, replacing any of the same name.
    public let headers: [String: String]

    /// Creates the interceptor.
    /// - Parameter headers: The fields to set.
    public init(_ headers: [String: String]) { self.headers = headers }

    /// Sets the fields.
    /// - Parameter request: The request about to be sent.
    public func intercept(_ request: inout URLRequest) {
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    }
}
