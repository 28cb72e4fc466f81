/// The claims of the HS256 request JWT of `POST /pa/v3/keystore/create`
/// (mobile SDK `GetTemporaryKeyRequest`). Public values only.
public struct TemporaryKeyRequestClaims: Codable, Equatable, Sendable {
    /// The application key (Base64 text), always present.
    public let applicationKey: String
    /// The activation identifier; present exactly in activation scope.
    public let activationId: String?
    /// Base64 of 18 random bytes, echoed by the response.
    public let challenge: String
    /// Issued at, seconds since 1970: not sent by the SDK, checked by a server only when present.
    public let iat: Int64?
    /// Expires at, seconds since 1970: as ``iat``.
    public let exp: Int64?

    /// Creates request claims.
    /// - Parameters:
    ///   - applicationKey: the application key (Base64 text).
    ///   - activationId: the activation identifier in activation scope, `nil` in application scope.
    ///   - challenge: the challenge (``TemporaryKeyJWT/makeChallenge()``).
    ///   - iat: issued at (seconds), `nil` as the SDK sends it.
    ///   - exp: expiry (seconds), `nil` as the SDK sends it.
    public init(
        applicationKey: String, activationId: String?, challenge: String, iat: Int64? = nil, exp: Int64? = nil
    ) {
        self.applicationKey = applicationKey
        self.activationId = activationId
        self.challenge = challenge
        self.iat = iat
        self.exp = exp
    }
}

/// The sanity rule for the optional `iat` and `exp` of a temporary-key request (V3.3 and V4):
/// upstream's request models carry neither, so their absence is never an error; when a client
/// sends them they must describe a request made around now.
public enum TemporaryKeyClaimTimes {
    /// How far a request's `iat` may lie ahead of the server's clock, and its `exp` behind it.
    public static let skewSeconds: Int64 = 300

    /// Whether the optional times make sense: `exp` not before `iat`, `iat` at most
    /// ``skewSeconds`` ahead of now, `exp` at most ``skewSeconds`` behind now.
    /// - Parameters:
    ///   - issuedAt: the `iat` claim, or `nil`.
    ///   - expiresAt: the `exp` claim, or `nil`.
    ///   - nowSeconds: the server's clock, seconds since 1970.
    /// - Returns: `true` when absent or sane.
    public static func check(issuedAt: Int64?, expiresAt: Int64?, nowSeconds: Int64) -> Bool {
        if let issuedAt, issuedAt > nowSeconds + skewSeconds { return false }
        if let expiresAt, expiresAt < nowSeconds - skewSeconds { return false }
        if let issuedAt, let expiresAt, expiresAt < issuedAt { return false }
        return true
    }
}

/// The claims of the ES256 response JWT (powerauth-server `TemporaryKeyBehavior`):
/// the key identifier as `sub`, the echoed request values, the temporary public
/// key and its validity in seconds (`iat`, `exp`) and milliseconds (`iat_ms`, `exp_ms`).
public struct TemporaryKeyResponseClaims: Codable, Equatable, Sendable {
    /// The temporary key identifier (`sub`), the `temporaryKeyId` of 3.3 ECIES.
    public let temporaryKeyId: String
    /// The application key the key serves.
    public let applicationKey: String
    /// The activation the key serves (activation scope only).
    public let activationId: String?
    /// The request's challenge, echoed.
    public let challenge: String
    /// Base64 of the 65-byte uncompressed temporary public key.
    public let publicKey: String
    /// Issued at, seconds since 1970.
    public let issuedAt: Int64
    /// Expires at, seconds since 1970.
    public let expiresAt: Int64
    /// Issued at, milliseconds since 1970.
    public let issuedAtMilliseconds: Int64
    /// Expires at, milliseconds since 1970.
    public let expiresAtMilliseconds: Int64

    enum CodingKeys: String, CodingKey {
        case temporaryKeyId = "sub"
        case applicationKey, activationId, challenge, publicKey
        case issuedAt = "iat"
        case expiresAt = "exp"
        case issuedAtMilliseconds = "iat_ms"
        case expiresAtMilliseconds = "exp_ms"
    }

    /// Creates response claims; the second values are the millisecond values divided by 1000.
    /// - Parameters:
    ///   - temporaryKeyId: the key identifier.
    ///   - request: the request being answered (application key, activation, challenge).
    ///   - publicKey: Base64 of the uncompressed temporary public key.
    ///   - issuedAtMilliseconds: issue time, ms since 1970.
    ///   - expiresAtMilliseconds: expiry, ms since 1970.
    public init(
        temporaryKeyId: String, request: TemporaryKeyRequestClaims, publicKey: String,
        issuedAtMilliseconds: Int64, expiresAtMilliseconds: Int64
    ) {
        self.temporaryKeyId = temporaryKeyId
        self.applicationKey = request.applicationKey
        self.activationId = request.activationId
        self.challenge = request.challenge
        self.publicKey = publicKey
        self.issuedAt = issuedAtMilliseconds / 1000
        self.expiresAt = expiresAtMilliseconds / 1000
        self.issuedAtMilliseconds = issuedAtMilliseconds
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }
}
