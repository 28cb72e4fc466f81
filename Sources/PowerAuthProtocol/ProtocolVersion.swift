/// The protocol versions of the `pa_version` header parameter. They differ
/// only in how the online authentication code is written.
public enum ProtocolVersion: String, CaseIterable, Sendable {
    /// Version 3.0: decimal components of 8 digits.
    case v3_0 = "3.0"
    /// Version 3.1: Base64 of the last 16 bytes of each component.
    case v3_1 = "3.1"
    /// Version 3.2: as 3.1.
    case v3_2 = "3.2"
    /// Version 3.3: as 3.1 (what `LEGACY_P256` speaks).
    case v3_3 = "3.3"

    /// Parses `pa_version`.
    /// - Parameter text: for example `"3.1"`.
    /// - Throws: ``ProtocolError/unsupportedProtocolVersion(_:)``.
    public init(parsing text: some StringProtocol) throws(ProtocolError) {
        guard let version = ProtocolVersion(rawValue: String(text)) else {
            throw .unsupportedProtocolVersion(ProtocolError.echo(text))
        }
        self = version
    }

    /// The online authentication-code format of this version.
    public var authenticationCodeFormat: AuthenticationCodeFormat {
        self == .v3_0 ? .decimal(componentLength: ProtocolConstants.decimalComponentLength) : .base64
    }
}
