import Foundation
import PowerAuthProtocol
import SecureCore

/// The server's temporary keys, stateless: the ECIES key pairs of protocol 3.3 and the
/// `KEY_TEMPORARY_SHARED_SECRET`s of protocol V4, each valid 5 minutes and bound to one
/// application key and, in activation scope, one activation.
///
/// Nothing is kept per key. The key's secret part (the P-256 private key, or the V4 shared
/// secret) travels sealed in its own identifier: XChaCha20-Poly1305 under a key derived from the
/// server's master private key, with the generation, the expiry and the scope as associated
/// data. So
/// - no table fills: an unauthenticated `keystore/create` flood costs the server CPU (the rate
///   limit answers that), never memory, and never refuses a legitimate key;
/// - every instance that shares the application's configuration (a PostgreSQL deployment) opens
///   a key another instance issued, without a shared table;
/// - a request holds its own copy of the key, which nothing else can destroy while it runs;
/// - a restart does not invalidate issued keys; changing the master key pair does.
///
/// Upstream keeps its temporary keys in its database (powerauth-server `TemporaryKeyBehavior`)
/// and names them with UUIDs; clients treat the identifier as an opaque string
/// (`docs/security.md`, "Temporary keys", has the layout and what it trades).
public final class TemporaryKeyStore: Sendable {
    /// Which protocol generation a key serves; part of the sealed identifier's associated data, so
    /// a V3.3 key never opens as a V4 one.
    public enum Generation: UInt8, Sendable {
        /// ECIES 3.3: the sealed part is the 32-byte P-256 private key.
        case v3 = 3
        /// V4 end-to-end encryption: the sealed part is the 32-byte shared secret.
        case v4 = 4
    }

    /// A freshly created 3.3 key's public facts.
    public struct Created: Sendable, Equatable {
        /// The key identifier, the `temporaryKeyId` of 3.3 ECIES.
        public let temporaryKeyId: String
        /// The 65-byte uncompressed public key.
        public let publicKey: [UInt8]
        /// Expiry, milliseconds since 1970.
        public let expiresAtMilliseconds: Int64
    }

    /// Validity of a new key, in milliseconds.
    public let validityMilliseconds: Int64
    /// The sealing key: `HMAC-SHA256(master private key, label)`, made once, kept off the scratch pool.
    private let sealingKey: SecureBytes

    /// Layout of an identifier (before base64url): format, generation, expiry, nonce, sealed part.
    static let format: UInt8 = 1
    static let nonceBytes = 24
    static let secretBytes = 32
    static let headerBytes = 2 + 8
    static let identifierBytes = headerBytes + nonceBytes + secretBytes + AEAD.tagByteCount

    /// Creates the store.
    /// - Parameters:
    ///   - masterPrivateKey: the application's master private key (the same on every instance).
    ///   - validityMilliseconds: validity of each key (default 300000, as upstream).
    /// - Throws: ``ActivationServerError/protocolFailure(_:)`` when the sealing key cannot be derived.
    public init(masterPrivateKey: SecureBytes, validityMilliseconds: Int64 = TemporaryKeyAPI.validityMilliseconds)
        throws(ActivationServerError)
    {
        precondition(validityMilliseconds > 0, "a temporary key needs time")
        self.validityMilliseconds = validityMilliseconds
        let derived = try protocolStep { () throws(ProtocolError) in
            try lift { () throws(SecureCoreError) in
                try HMACSHA256.deriveKey(
                    label: Array("SecurePIN stateless temporary keys v1".utf8), from: [masterPrivateKey])
            }
        }
        defer { derived.destroy() }
        sealingKey = try protocolStep { () throws(ProtocolError) in
            try lift { () throws(SecureCoreError) in try derived.copy(lasting: true) }
        }
    }

    /// Generates a 3.3 key pair and returns its public half with an identifier that carries the
    /// private half sealed.
    /// - Parameters:
    ///   - applicationKey: the application it serves.
    ///   - activationId: the activation it serves, `nil` in application scope.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the key's identifier, public key and expiry.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)`` if key generation or sealing fails.
    public func create(applicationKey: String, activationId: String?, now: Int64) throws(ActivationServerError)
        -> Created
    {
        let pair = try protocolStep { () throws(ProtocolError) in
            try lift { () throws(SecureCoreError) in try P256.generateKeyPair() }
        }
        defer { pair.privateKey.destroy() }
        let (id, expires) = try issue(
            pair.privateKey, generation: .v3, applicationKey: applicationKey, activationId: activationId, now: now)
        return Created(temporaryKeyId: id, publicKey: pair.publicKey, expiresAtMilliseconds: expires)
    }

    /// Seals a key's secret part into a new identifier.
    /// - Parameters:
    ///   - secret: 32 bytes (a P-256 private key, a V4 shared secret); only read.
    ///   - generation: the protocol generation it serves.
    ///   - applicationKey: the application it serves.
    ///   - activationId: the activation it serves, `nil` in application scope.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the identifier and the expiry (ms since 1970).
    /// - Throws: ``ActivationServerError/protocolFailure(_:)``.
    public func issue(
        _ secret: SecureBytes, generation: Generation, applicationKey: String, activationId: String?, now: Int64
    ) throws(ActivationServerError) -> (temporaryKeyId: String, expiresAtMilliseconds: Int64) {
        guard secret.count == Self.secretBytes else {
            throw .protocolFailure(
                .invalidLength(field: "temporary key", expected: Self.secretBytes, actual: secret.count))
        }
        let expires = now + validityMilliseconds
        let header = Self.header(generation: generation, expires: expires)
        let box = try protocolStep { () throws(ProtocolError) in
            try lift { () throws(SecureCoreError) in
                try AEAD.seal(
                    secret, using: sealingKey,
                    associatedData: Self.associatedData(
                        header, applicationKey: applicationKey, activationId: activationId))
            }
        }
        return (Base64URL.encode(header + box.nonce + box.ciphertext), expires)
    }

    /// The secret part of the key an encrypted request names, as upstream's `temporaryPrivateKey`:
    /// an identifier that does not parse or open, an expired key, or a key of another generation,
    /// application or activation is one refusal.
    /// - Parameters:
    ///   - temporaryKeyId: the identifier from the request.
    ///   - generation: the generation of the request.
    ///   - applicationKey: the request's application key.
    ///   - activationId: the request's activation, `nil` in application scope.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the secret in fresh secure memory; the caller destroys it.
    /// - Throws: ``ActivationServerError/temporaryKeyFailure``.
    public func open(
        _ temporaryKeyId: String, generation: Generation, applicationKey: String, activationId: String?, now: Int64
    ) throws(ActivationServerError) -> SecureBytes {
        guard temporaryKeyId.utf8.count <= 2 * Self.identifierBytes,
            let bytes = Base64URL.decode(temporaryKeyId), bytes.count == Self.identifierBytes,
            bytes[0] == Self.format, bytes[1] == generation.rawValue
        else { throw .temporaryKeyFailure }
        let header = Array(bytes[0..<Self.headerBytes])
        let expires = bytes[2..<Self.headerBytes].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        guard expires > now else { throw .temporaryKeyFailure }
        let box = AEAD.SealedBox(
            algorithm: .xChaCha20Poly1305,
            nonce: Array(bytes[Self.headerBytes..<(Self.headerBytes + Self.nonceBytes)]),
            ciphertext: Array(bytes[(Self.headerBytes + Self.nonceBytes)...]))
        let opened: SecureBytes?
        do throws(SecureCoreError) {
            opened = try AEAD.open(
                box, using: sealingKey,
                associatedData: Self.associatedData(header, applicationKey: applicationKey, activationId: activationId))
        } catch {
            throw .temporaryKeyFailure
        }
        guard let opened, opened.count == Self.secretBytes else {
            opened?.destroy()
            throw .temporaryKeyFailure
        }
        return opened
    }

    /// The 3.3 private key for an ECIES request naming `temporaryKeyId` (see ``open(_:generation:applicationKey:activationId:now:)``).
    /// - Parameters:
    ///   - temporaryKeyId: the identifier from the request.
    ///   - applicationKey: the request's application key.
    ///   - activationId: the request's activation, `nil` in application scope.
    ///   - now: the current time, ms since 1970.
    /// - Returns: the private key in fresh secure memory; the caller destroys it.
    /// - Throws: ``ActivationServerError/temporaryKeyFailure``.
    public func privateKey(temporaryKeyId: String, applicationKey: String, activationId: String?, now: Int64)
        throws(ActivationServerError) -> SecureBytes
    {
        try open(temporaryKeyId, generation: .v3, applicationKey: applicationKey, activationId: activationId, now: now)
    }

    /// Format, generation and the expiry (big-endian ms).
    static func header(generation: Generation, expires: Int64) -> [UInt8] {
        [format, generation.rawValue] + (0..<8).reversed().map { UInt8(truncatingIfNeeded: expires >> ($0 * 8)) }
    }

    /// A label, the header, and the scope, each length-prefixed so no two scopes share bytes.
    static func associatedData(_ header: [UInt8], applicationKey: String, activationId: String?) -> [UInt8] {
        func prefixed(_ text: String) -> [UInt8] {
            let bytes = Array(text.utf8)
            return [UInt8(truncatingIfNeeded: bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count)] + bytes
        }
        return Array("SecurePIN temporary key id v1".utf8) + header + prefixed(applicationKey)
            + (activationId.map { [1] + prefixed($0) } ?? [0])
    }
}
