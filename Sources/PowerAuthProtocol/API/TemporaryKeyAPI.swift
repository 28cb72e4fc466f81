/// `POST /pa/v3/keystore/create` (protocol 3.3): a client sends an HS256 request JWT
/// and receives an ES256 response JWT carrying a temporary ECIES public key
/// (``TemporaryKeyJWT``). Plain envelopes: `{"requestObject":{"jwt":…}}` →
/// `{"status":"OK","responseObject":{"jwt":…}}`.
public enum TemporaryKeyAPI {
    /// The endpoint; not signed with an authentication code.
    public static let createKey = ActivationAPI.Endpoint<JWTMessage, JWTMessage>(
        path: "/pa/v3/keystore/create", uriIdentifier: nil)
    /// The error code of a refused request (restful-integration `KeyStoreController`).
    public static let errorCode = "ERR_TEMPORARY_KEY"
    /// The error message upstream sends with ``errorCode``.
    public static let errorMessage = "POWER_AUTH_TEMPORARY_KEY_FAILURE"
    /// How long a temporary key is valid (powerauth-server
    /// `powerauth.service.crypto.temporaryKeyValidityMilliseconds`, default 300000).
    public static let validityMilliseconds: Int64 = 300_000
}

/// `{"jwt": …}`, the request and the response object of ``TemporaryKeyAPI/createKey``.
public struct JWTMessage: Codable, Sendable, Equatable {
    /// The compact JWS.
    public var jwt: String
    /// Wraps a token.
    /// - Parameter jwt: the compact JWS.
    public init(jwt: String) { self.jwt = jwt }
}
