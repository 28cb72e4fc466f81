import Foundation
import SecureCore

/// An application-scope temporary ECIES key (protocol 3.3) for a client that holds only the
/// configuration string, with no activation: the request JWT of `POST /pa/v3/keystore/create`
/// (HS256 under the decoded application secret) and the check of its response (ES256 under the
/// configuration's master server public key, echoing the challenge and the application key, not
/// expired). The mobile SDK's `GetTemporaryKeyTask` in application scope, without the transport.
///
/// ```swift
/// let request = try ApplicationTemporaryKey.Request(configuration: sdk)
/// // POST {"requestObject": request.message} to /pa/v3/keystore/create, then:
/// let key = try ApplicationTemporaryKey(verifying: answer, request: request, configuration: sdk, now: Date())
/// ```
public struct ApplicationTemporaryKey: Sendable, Equatable {
    /// The key identifier, the `temporaryKeyId` of 3.3 ECIES.
    public let temporaryKeyId: String
    /// The 65-byte uncompressed P-256 public key.
    public let publicKey: [UInt8]
    /// When the server stops accepting the key.
    public let expiresAt: Date

    /// A key from its parts, unverified (tests that present a key the server did not issue).
    /// - Parameters:
    ///   - temporaryKeyId: the identifier.
    ///   - publicKey: the public key.
    ///   - expiresAt: the expiry.
    package init(temporaryKeyId: String, publicKey: [UInt8], expiresAt: Date) {
        self.temporaryKeyId = temporaryKeyId
        self.publicKey = publicKey
        self.expiresAt = expiresAt
    }

    /// One signed request for a key.
    public struct Request: Sendable, Equatable {
        /// The claims (public: application key and a fresh challenge).
        public let claims: TemporaryKeyRequestClaims
        /// The request object, `{"jwt": …}`.
        public let message: JWTMessage

        /// Signs a request with a fresh challenge.
        /// - Parameter configuration: the application's configuration string, parsed.
        /// - Throws: ``JWTError`` (``JWTError/core(_:)`` when the signing key cannot be derived).
        public init(configuration: SDKConfiguration) throws(JWTError) {
            let claims = TemporaryKeyRequestClaims(
                applicationKey: configuration.applicationKey, activationId: nil,
                challenge: try TemporaryKeyJWT.makeChallenge())
            let key: SecureBytes
            do throws(ProtocolError) {
                key = try TemporaryKeyJWT.applicationSigningKey(applicationSecret: configuration.applicationSecret)
            } catch {
                throw .malformed(reason: "applicationSecret")
            }
            defer { key.destroy() }
            self.claims = claims
            message = JWTMessage(jwt: try TemporaryKeyJWT.signRequest(claims, key: key))
        }
    }

    /// Verifies the server's answer to `request`.
    /// - Parameters:
    ///   - response: the response object, `{"jwt": …}`.
    ///   - request: the request it answers.
    ///   - configuration: the configuration whose master server public key must have signed it.
    ///   - now: the current time (the key must not be expired).
    /// - Throws: ``JWTError``.
    public init(verifying response: JWTMessage, request: Request, configuration: SDKConfiguration, now: Date)
        throws(JWTError)
    {
        let claims = try TemporaryKeyJWT.verifyResponse(
            response.jwt, publicKey: configuration.masterServerPublicKey, request: request.claims, now: now)
        guard claims.activationId == nil else { throw .claimMismatch(claim: "activationId") }
        guard let publicKey = Base64.decode(claims.publicKey) else { throw .malformed(reason: "publicKey") }
        temporaryKeyId = claims.temporaryKeyId
        self.publicKey = publicKey
        expiresAt = Date(timeIntervalSince1970: Double(claims.expiresAtMilliseconds) / 1000)
    }
}
