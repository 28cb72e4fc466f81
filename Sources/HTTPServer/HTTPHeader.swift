/// One header field of a request or response.
///
/// The description shows the name only: values such as `Authorization` must never reach a log.
public struct HTTPHeader: Sendable, Equatable {
    /// The field name as the peer sent it (compare case-insensitively).
    public var name: String
    /// The field value.
    public var value: String

    /// Creates a header field.
    /// - Parameters:
    ///   - name: The field name, for example `Content-Type`.
    ///   - value: The field value.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `Authorization`.
    public static let authorization = "Authorization"
    /// `X-PowerAuth-Authorization`, PowerAuth's signed-request header.
    public static let powerAuthAuthorization = "X-PowerAuth-Authorization"
    /// `Content-Type`.
    public static let contentType = "Content-Type"
    /// `X-Forwarded-For`, the client addresses a reverse proxy appends to.
    public static let forwardedFor = "X-Forwarded-For"
    /// `X-SecurePIN-Admin-Token`, the header carrying the back-office token.
    public static let adminToken = "X-SecurePIN-Admin-Token"
}

// MARK: - CustomStringConvertible

extension HTTPHeader: CustomStringConvertible {
    /// The name and a redacted value.
    public var description: String { "\(name): <redacted>" }
}
