import Foundation
import PowerAuthProtocol

/// A temporary ECIES public key (protocol 3.3) the server issued through
/// `POST /pa/v3/keystore/create`, verified: its JWT signature, the echoed
/// challenge, application key and activation. Public values only.
public struct TemporaryEncryptionKey: Sendable, Equatable {
    /// The key identifier, the 3.3 ECIES `temporaryKeyId`.
    public let temporaryKeyId: String
    /// The 65-byte uncompressed public key to encrypt to.
    public let publicKey: [UInt8]
    /// The scope it serves.
    public let scope: ECIES.Scope
    /// The activation it serves (activation scope).
    public let activationId: String?
    /// When the server stops accepting it (`exp_ms`).
    public let expiresAt: Date

    /// How long before ``expiresAt`` the client stops using a cached key, so a
    /// request in flight does not reach the server with an expired key.
    public static let expiryMargin: TimeInterval = 10
}
