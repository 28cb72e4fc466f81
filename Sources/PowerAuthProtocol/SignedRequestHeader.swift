/// The `X-PowerAuth-Authorization` header of a signed request, in the generation of the
/// activation that signed it: a V3.3 header (`pa_signature_type`, `pa_signature`) or a V4 header
/// (`pa_auth_code_type`, `pa_auth_code`, `pa_version="4.0"`).
///
/// An application sends ``value`` under ``name`` and needs nothing else; the generation's own
/// header is there for a server or a test that reads its fields.
public enum SignedRequestHeader: Sendable, Equatable {
    /// A V3.3 header (`LEGACY_P256`).
    case v3(AuthorizationHeader)
    /// A V4 header (the `EC_P384` suites).
    case v4(V4AuthorizationHeader)

    /// The header name, `X-PowerAuth-Authorization`.
    public static var name: String { AuthorizationHeader.name }

    /// The header value.
    public var value: String {
        switch self {
        case .v3(let header): header.value
        case .v4(let header): header.value
        }
    }

    /// The activation that signed.
    public var activationId: String {
        switch self {
        case .v3(let header): header.activationId
        case .v4(let header): header.activationId
        }
    }

    /// The factors the code combines.
    public var factorSet: FactorSet {
        switch self {
        case .v3(let header): header.factorSet
        case .v4(let header): header.factorSet
        }
    }

    /// The 16-byte request nonce.
    public var nonce: [UInt8] {
        switch self {
        case .v3(let header): header.nonce
        case .v4(let header): header.nonce
        }
    }

    /// The authentication code as sent: Base64 of 16-byte components (V3.3) or of 32-byte
    /// components (V4).
    public var authenticationCode: String {
        switch self {
        case .v3(let header): header.authenticationCode
        case .v4(let header): header.authenticationCode
        }
    }
}

/// The `X-PowerAuth-Token` header of one request, in the generation of the activation whose
/// token made it: a V3.3 header (`token_digest`, HMAC-SHA256) or a V4 header (KMAC-256 digest,
/// `version="4.0"`).
public enum SignedTokenHeader: Sendable, Equatable {
    /// A V3.3 header (`LEGACY_P256`).
    case v3(TokenHeader)
    /// A V4 header (the `EC_P384` suites).
    case v4(V4TokenHeader)

    /// The header name, `X-PowerAuth-Token`.
    public static var name: String { TokenHeader.name }

    /// The header value.
    public var value: String {
        switch self {
        case .v3(let header): header.value
        case .v4(let header): header.value
        }
    }

    /// The token the header names.
    public var tokenId: String {
        switch self {
        case .v3(let header): header.tokenId
        case .v4(let header): header.tokenId
        }
    }
}
