import Foundation

/// The answer a handler gives to one request.
public struct HTTPResponse: Sendable {
    /// The status code, 100...599. Anything else is sent as 500.
    public var status: Int
    /// The `Content-Type` value.
    public var contentType: String
    /// The body.
    public var body: Data
    /// Extra header fields (at most 16; names without `:` and no CR or LF anywhere, or the
    /// response is replaced by a 500). `Content-Type`, `Content-Length`, `Date` and, while
    /// the server stops, `Connection: close` are added by the server.
    public var headers: [HTTPHeader]

    /// Creates a response.
    /// - Parameters:
    ///   - status: The status code.
    ///   - contentType: The media type; JSON unless said otherwise.
    ///   - body: The body.
    ///   - headers: Extra header fields.
    public init(
        status: Int, contentType: String = "application/json", body: Data = Data(), headers: [HTTPHeader] = []
    ) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    /// A UTF-8 plain-text response.
    /// - Parameters:
    ///   - status: The status code.
    ///   - text: The body text.
    /// - Returns: The response.
    public static func text(status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Data(text.utf8))
    }
}
