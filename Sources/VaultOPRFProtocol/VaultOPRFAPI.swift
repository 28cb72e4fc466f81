import Foundation
import PowerAuthProtocol
import SecureCore

/// The wire format of the server binding of a PIN vault: an oblivious PRF (RFC 9497,
/// ristretto255-SHA512) evaluated by the server with a per-vault key, attempts counted by the
/// server, and a key-confirmation proof that tells it an unlock succeeded. `docs/vault-format.md`
/// gives the argument; this type gives the bytes.
///
/// Every request and every success response is one ECIES cryptogram (PowerAuth 3.3 format,
/// application scope, `SHARED_INFO_1` `/pa/generic/application`, under an application-scope
/// temporary key from `POST /pa/v3/keystore/create` whose response JWT verified under the master
/// server public key of the configuration string; its `temporaryKeyId` is in the associated data)
/// carried as JSON (``Cryptogram``). Its plaintext is binary:
///
/// | operation | request plaintext after `op ‖ vaultId` | response plaintext |
/// |---|---|---|
/// | register | blinded element (32) | vaultId (16) ‖ evaluated (32) ‖ challenge (16) ‖ counters (9) |
/// | enroll | verifier (32) | counters (9) |
/// | evaluate | blinded element (32) | evaluated (32) ‖ challenge (16) ‖ counters (9) |
/// | confirm | proof (32) | counters (9) |
/// | status | — | counters (9) |
/// | remove | proof (32) | counters (9) |
///
/// `op` is one byte (the path's ``Operation``), `vaultId` 16 bytes (zeros for register), the
/// counters `state (1) ‖ failures (u32be) ‖ maxFailures (u32be)`. Errors are plain JSON
/// (``Failure``) with an HTTP status: they carry nothing secret.
public enum VaultOPRFAPI {
    /// Every path starts here, apart from PowerAuth's `/pa/`.
    public static let pathPrefix = "/securepin/v1/vault/"
    /// The ECIES version of the exchange.
    public static let eciesVersion: ProtocolVersion = .v3_3
    /// The ``Failure/error`` of a request under a temporary key the server does not hold (unknown,
    /// expired, forgotten by a restart): nothing was counted, and the client may fetch a new key and
    /// send the request again.
    public static let temporaryKeyRefused = "temporary-key"
    /// The ECIES purpose.
    public static let sharedInfo1: ECIES.SharedInfo1 = .applicationScopeGeneric
    /// Size of a vault identifier.
    public static let vaultIdByteCount = 16
    /// Size of a challenge.
    public static let challengeByteCount = 16
    /// Size of a verifier and of a proof (HMAC-SHA256).
    public static let proofByteCount = 32
    /// Size of the counters block.
    public static let countersByteCount = 9

    /// One operation, one path.
    public enum Operation: UInt8, Sendable, CaseIterable {
        /// Creates the vault's server record and evaluates the first blinded element.
        case register = 1
        /// Stores the verifier of a registered vault, once.
        case enroll = 2
        /// Counts one attempt, then evaluates a blinded element.
        case evaluate = 3
        /// Proves the last evaluation opened the vault: the counter returns to zero.
        case confirm = 4
        /// The counters, counting nothing.
        case status = 5
        /// Proves, like ``confirm``, that the last evaluation opened the vault, and deletes the
        /// server record: the vault was destroyed, or its PIN changed to a new record.
        case remove = 6

        /// The HTTP path.
        public var path: String { VaultOPRFAPI.pathPrefix + String(describing: self) }

        /// The operation of a path, if it is one of ours.
        /// - Parameter path: a request path.
        /// - Returns: the operation, or `nil`.
        public init?(path: String) {
            guard let found = Self.allCases.first(where: { $0.path == path }) else { return nil }
            self = found
        }

        /// Bytes of the request plaintext after `op ‖ vaultId`.
        public var requestBodyByteCount: Int {
            switch self {
            case .register, .evaluate: OPRF.elementByteCount
            case .enroll, .confirm, .remove: VaultOPRFAPI.proofByteCount
            case .status: 0
            }
        }
    }

    /// The server record's state.
    public enum State: UInt8, Sendable, Codable {
        /// Registered; the verifier is not stored yet.
        case pending = 0
        /// In use.
        case active = 1
        /// The failures reached the maximum: nothing is evaluated any more.
        case blocked = 2
    }

    /// The server's counters, as the responses carry them.
    public struct Counters: Sendable, Equatable, Codable {
        /// The record's state.
        public var state: State
        /// Attempts counted since the last confirmed unlock.
        public var failures: Int
        /// The limit at which the server blocks.
        public var maxFailures: Int

        /// Creates counters.
        public init(state: State, failures: Int, maxFailures: Int) {
            self.state = state
            self.failures = failures
            self.maxFailures = maxFailures
        }

        /// `state ‖ failures ‖ maxFailures`.
        public var bytes: [UInt8] {
            [state.rawValue] + VaultOPRFAPI.u32(failures) + VaultOPRFAPI.u32(maxFailures)
        }

        /// Parses 9 bytes.
        public init?(_ bytes: ArraySlice<UInt8>) {
            guard bytes.count == VaultOPRFAPI.countersByteCount, let state = State(rawValue: bytes[bytes.startIndex])
            else { return nil }
            let base = bytes.startIndex
            self.init(
                state: state, failures: VaultOPRFAPI.readU32(bytes, base + 1),
                maxFailures: VaultOPRFAPI.readU32(bytes, base + 5))
        }
    }

    /// An ECIES cryptogram as JSON (Base64 fields).
    public struct Cryptogram: Codable, Sendable {
        /// The temporary key the request is encrypted to (requests only).
        public var temporaryKeyId: String?
        /// The client's ephemeral public key (requests only).
        public var ephemeralPublicKey: String?
        /// The ciphertext.
        public var encryptedData: String
        /// The MAC.
        public var mac: String
        /// The nonce.
        public var nonce: String?
        /// Milliseconds since 1970.
        public var timestamp: UInt64?

        /// From a cryptogram.
        public init(_ c: ECIESCryptogram) {
            temporaryKeyId = c.temporaryKeyId
            ephemeralPublicKey = c.ephemeralPublicKey.map { Data($0).base64EncodedString() }
            encryptedData = Data(c.encryptedData).base64EncodedString()
            mac = Data(c.mac).base64EncodedString()
            nonce = c.nonce.map { Data($0).base64EncodedString() }
            timestamp = c.timestamp
        }

        /// The cryptogram, or `nil` when a field is not Base64.
        public var cryptogram: ECIESCryptogram? {
            func bytes(_ text: String?) -> [UInt8]?? {
                guard let text else { return .some(nil) }
                guard let data = Data(base64Encoded: text) else { return nil }
                return .some([UInt8](data))
            }
            guard let ephemeral = bytes(ephemeralPublicKey), let data = bytes(encryptedData), let data,
                let mac = bytes(mac), let mac, let nonce = bytes(nonce)
            else { return nil }
            return ECIESCryptogram(
                temporaryKeyId: temporaryKeyId, ephemeralPublicKey: ephemeral, encryptedData: data, mac: mac,
                nonce: nonce, timestamp: timestamp)
        }
    }

    /// An error answer.
    public struct Failure: Codable, Sendable, Equatable {
        /// `blocked`, `unknown-vault`, `wrong-state`, `proof-refused`, `malformed`, `expired`,
        /// ``VaultOPRFAPI/temporaryKeyRefused``.
        public var error: String
        /// The counters, when the vault is known.
        public var counters: Counters?

        /// Creates an answer.
        public init(error: String, counters: Counters? = nil) {
            self.error = error
            self.counters = counters
        }
    }

    /// The ECIES parameters of one request of an application.
    /// - Parameters:
    ///   - configuration: the application's configuration string, parsed.
    ///   - temporaryKeyId: the application-scope temporary key the request is encrypted to.
    /// - Returns: the configuration.
    /// - Throws: `PowerAuthProtocol.ECIESError`.
    public static func eciesConfiguration(_ configuration: SDKConfiguration, temporaryKeyId: String) throws(ECIESError)
        -> ECIESConfiguration
    {
        try ECIESConfiguration(
            version: eciesVersion, sharedInfo1: sharedInfo1, applicationKey: configuration.applicationKey,
            applicationSecret: configuration.applicationSecret, temporaryKeyId: temporaryKeyId)
    }

    /// The key-confirmation proof: `HMAC-SHA256(verifier, label ‖ vaultId ‖ challenge)`.
    /// - Parameters:
    ///   - verifier: the 32-byte verifier (derived by the client from the OPRF output).
    ///   - vaultId: the vault's identifier.
    ///   - challenge: the challenge of the evaluation being confirmed.
    /// - Returns: the proof (single use: the challenge is).
    /// - Throws: `SecureCore.SecureCoreError`.
    public static func proof(verifier: SecureBytes, vaultId: [UInt8], challenge: [UInt8]) throws(SecureCoreError)
        -> [UInt8]
    {
        try HMACSHA256.authenticate(Array("SecurePIN vault confirm v1".utf8) + vaultId + challenge, key: verifier)
    }

    /// The removal proof: `HMAC-SHA256(verifier, "SecurePIN vault remove v1" ‖ vaultId ‖ challenge)`.
    /// Its own label, so a confirmation an observer saw can never be turned into a removal.
    /// - Parameters:
    ///   - verifier: the 32-byte verifier.
    ///   - vaultId: the vault's identifier.
    ///   - challenge: the challenge of the evaluation that opened the vault.
    /// - Returns: the proof (single use).
    /// - Throws: `SecureCore.SecureCoreError`.
    public static func removalProof(verifier: SecureBytes, vaultId: [UInt8], challenge: [UInt8])
        throws(SecureCoreError) -> [UInt8]
    {
        try HMACSHA256.authenticate(Array("SecurePIN vault remove v1".utf8) + vaultId + challenge, key: verifier)
    }

    /// A request plaintext in secure memory: `op ‖ vaultId ‖ body`, `body` written by `fill`.
    /// - Parameters:
    ///   - operation: the operation.
    ///   - vaultId: 16 bytes, or zeros for register.
    ///   - fill: writes the operation's body (``Operation/requestBodyByteCount`` bytes).
    /// - Returns: the plaintext.
    /// - Throws: `SecureCore.SecureCoreError`.
    public static func request(
        _ operation: Operation, vaultId: [UInt8], fill: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(SecureCoreError) -> SecureBytes {
        guard vaultId.count == vaultIdByteCount else { throw .invalidSize(vaultId.count) }
        let plaintext = try SecureBytes(count: 1 + vaultIdByteCount + operation.requestBodyByteCount)
        plaintext.withUnsafeMutableBytes { out in
            out[0] = operation.rawValue
            for (i, byte) in vaultId.enumerated() { out[1 + i] = byte }
            fill(UnsafeMutableRawBufferPointer(rebasing: out[(1 + vaultIdByteCount)...]))
        }
        return plaintext
    }

    static func u32(_ value: Int) -> [UInt8] {
        let v = UInt32(clamping: value)
        return [
            UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8),
            UInt8(truncatingIfNeeded: v),
        ]
    }

    static func readU32(_ bytes: ArraySlice<UInt8>, _ at: Int) -> Int {
        Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
    }
}
