import Foundation
import PostQuantum
import PowerAuthProtocol
import SecureCore

/// The server's settings for one application.
public struct ActivationServerConfiguration: Sendable {
    /// The application key, 16 bytes.
    public let applicationKey: [UInt8]
    /// The application secret, 16 bytes.
    public let applicationSecret: [UInt8]
    /// The master key pair; its private key signs the activation data.
    public let masterKeyPair: KeyPair
    /// The counter look-ahead window, 1 ... 255 (default 20).
    public var lookAhead: Int
    /// Failed attempts that block an activation (default 5).
    public var maxFailedAttempts: Int
    /// How long a block after too many failures lasts; `nil` (the default)
    /// blocks until an administrator unblocks.
    public var failureBlockDuration: TimeInterval?
    /// Commit activations as soon as the device exchanged keys (default `false`).
    public var autoCommit: Bool
    /// The algorithm this application serves: `LEGACY_P256` (protocol V3.3, the default),
    /// `EC_P384` (protocol V4, which needs ``v4MasterKeyPair``) or a hybrid suite `EC_P384_ML_L3` /
    /// `EC_P384_ML_L5` (which also needs ``v4PostQuantumMasterKeyPair``); see
    /// ``serve(_:masterKeyPair:postQuantumMasterKeyPair:)``. The V3.3 endpoints stay available for
    /// `LEGACY_P256` activations either way.
    public var algorithm: ProtocolAlgorithm = .legacyP256
    /// The P-384 master key pair of protocol V4 (key `0x02` of the configuration string), which
    /// signs application-scope temporary keys.
    public var v4MasterKeyPair: ECP384KeyPair? = nil
    /// The ML-DSA master key pair of a hybrid suite (key `0x03`, ML-DSA-65, or `0x04`, ML-DSA-87),
    /// which signs application-scope temporary keys beside ``v4MasterKeyPair``.
    public var v4PostQuantumMasterKeyPair: MLDSA.KeyPair? = nil
    /// The name and version `/pa/v3/status` reports.
    public var serverApplication = ServerStatusResponse.Application(
        name: "SecurePIN reference server", version: "0.9.0")

    /// Creates a configuration with a fresh application key, secret and master key pair.
    /// - Parameters:
    ///   - lookAhead: the look-ahead window.
    ///   - maxFailedAttempts: the blocking limit, 1 ... 255.
    ///   - failureBlockDuration: the length of a failure block, or `nil`.
    ///   - autoCommit: whether to skip the commit step.
    /// - Throws: ``ActivationServerError/invalidConfiguration(reason:)``.
    public static func generate(
        lookAhead: Int = ProtocolConstants.defaultLookAhead,
        maxFailedAttempts: Int = ProtocolConstants.defaultMaxFailedAttempts, failureBlockDuration: TimeInterval? = nil,
        autoCommit: Bool = false
    ) throws(ActivationServerError) -> ActivationServerConfiguration {
        guard (1...ProtocolConstants.maximumLookAhead).contains(lookAhead) else {
            throw .invalidConfiguration(reason: "look-ahead must be 1 ... 255")
        }
        guard (1...255).contains(maxFailedAttempts) else {
            throw .invalidConfiguration(reason: "maximum failed attempts must be 1 ... 255")
        }
        try UnixTime.validateBlockDuration(failureBlockDuration)
        let crypto = try protocolStep { () throws(ProtocolError) in try ActivationCrypto() }
        let master = try protocolStep { () throws(ProtocolError) in try crypto.generateKeyPair() }
        do throws(SecureCoreError) {
            return ActivationServerConfiguration(
                applicationKey: try SecureRandom.bytes(count: ProtocolConstants.applicationKeyByteCount),
                applicationSecret: try SecureRandom.bytes(count: ProtocolConstants.applicationKeyByteCount),
                masterKeyPair: master, lookAhead: lookAhead, maxFailedAttempts: maxFailedAttempts,
                failureBlockDuration: failureBlockDuration, autoCommit: autoCommit)
        } catch {
            throw .protocolFailure(.core(error))
        }
    }

    /// The configuration string the client is given.
    /// - Returns: the string.
    /// - Throws: ``ActivationServerError/protocolFailure(_:)``.
    public func configurationString() throws(ActivationServerError) -> String {
        var v4Keys =
            v4MasterKeyPair.map {
                [SDKConfiguration.Key(id: ProtocolAlgorithm.ecdsaMasterKeyId, bytes: Self.compressed($0.publicKey))]
            } ?? []
        if let postQuantum = v4PostQuantumMasterKeyPair {
            let id: UInt8 = postQuantum.parameterSet == .mldsa65 ? 0x03 : 0x04
            v4Keys.append(SDKConfiguration.Key(id: id, bytes: postQuantum.publicKeyInfo))
        }
        let keys = v4Keys
        return try protocolStep { () throws(ProtocolError) in
            try SDKConfiguration(
                applicationKey: applicationKey, applicationSecret: applicationSecret,
                masterServerPublicKey: masterKeyPair.publicKey, otherKeys: keys
            ).encoded
        }
    }

    /// Makes the application serve `algorithm`; for a V4 suite the P-384 master key pair is
    /// `masterKeyPair`, the one already set, or a fresh one, and for a hybrid suite the ML-DSA
    /// master key pair likewise (`postQuantumMasterKeyPair` must be of the suite's parameter set).
    /// - Parameters:
    ///   - algorithm: `LEGACY_P256`, `EC_P384`, `EC_P384_ML_L3` or `EC_P384_ML_L5`.
    ///   - masterKeyPair: a stored V4 master key pair, if any.
    ///   - postQuantumMasterKeyPair: a stored ML-DSA master key pair, if any (hybrid suites).
    /// - Throws: ``ActivationServerError/invalidConfiguration(reason:)`` for an ML-DSA key of
    ///   another parameter set, ``ActivationServerError/protocolFailure(_:)``.
    public mutating func serve(
        _ algorithm: ProtocolAlgorithm, masterKeyPair: ECP384KeyPair? = nil,
        postQuantumMasterKeyPair: MLDSA.KeyPair? = nil
    ) throws(ActivationServerError) {
        guard algorithm.isV4 else {
            self.algorithm = algorithm
            return
        }
        if let set = algorithm.signatureParameterSet {
            if let postQuantumMasterKeyPair {
                guard postQuantumMasterKeyPair.parameterSet == set else {
                    throw .invalidConfiguration(
                        reason: "\(algorithm.rawValue) needs an \(V4TemporaryKeyJWT.algorithmName(set)) master key")
                }
                v4PostQuantumMasterKeyPair = postQuantumMasterKeyPair
            } else if v4PostQuantumMasterKeyPair?.parameterSet != set {
                do throws(PostQuantumError) {
                    v4PostQuantumMasterKeyPair = try MLDSA.KeyPair.generate(set)
                } catch {
                    throw .invalidConfiguration(reason: "no ML-DSA master key: \(error)")
                }
            }
        } else {
            v4PostQuantumMasterKeyPair = nil
        }
        if let masterKeyPair {
            v4MasterKeyPair = masterKeyPair
        } else if v4MasterKeyPair == nil {
            v4MasterKeyPair = try protocolStep { () throws(ProtocolError) in try ECP384KeyPair.generate() }
        }
        self.algorithm = algorithm
    }

    /// SEC1 compressed form of an uncompressed P-384 key (`02|03 ‖ X`).
    static func compressed(_ publicKey: [UInt8]) -> [UInt8] {
        guard publicKey.count == 97 else { return publicKey }
        return [0x02 | (publicKey[96] & 1)] + publicKey[1..<49]
    }
}

extension ActivationServerConfiguration {
    /// Restores a configuration whose keys were generated earlier (for example
    /// by ``generate(lookAhead:maxFailedAttempts:failureBlockDuration:autoCommit:)``
    /// and kept by a persistent server), so issued configuration strings stay valid.
    /// - Parameters:
    ///   - applicationKey: 16 bytes.
    ///   - applicationSecret: 16 bytes.
    ///   - masterKeyPair: the master key pair.
    ///   - lookAhead: the look-ahead window, 1 ... 255.
    ///   - maxFailedAttempts: the blocking limit, 1 ... 255.
    ///   - failureBlockDuration: the length of a failure block, or `nil`.
    ///   - autoCommit: whether to skip the commit step.
    /// - Throws: ``ActivationServerError/invalidConfiguration(reason:)``.
    public init(
        restoring applicationKey: [UInt8], applicationSecret: [UInt8], masterKeyPair: KeyPair,
        lookAhead: Int = ProtocolConstants.defaultLookAhead,
        maxFailedAttempts: Int = ProtocolConstants.defaultMaxFailedAttempts, failureBlockDuration: TimeInterval? = nil,
        autoCommit: Bool = false
    ) throws(ActivationServerError) {
        guard applicationKey.count == ProtocolConstants.applicationKeyByteCount,
            applicationSecret.count == ProtocolConstants.applicationKeyByteCount
        else { throw .invalidConfiguration(reason: "application key and secret must be 16 bytes") }
        guard (1...ProtocolConstants.maximumLookAhead).contains(lookAhead) else {
            throw .invalidConfiguration(reason: "look-ahead must be 1 ... 255")
        }
        guard (1...255).contains(maxFailedAttempts) else {
            throw .invalidConfiguration(reason: "maximum failed attempts must be 1 ... 255")
        }
        try UnixTime.validateBlockDuration(failureBlockDuration)
        self.init(
            applicationKey: applicationKey, applicationSecret: applicationSecret, masterKeyPair: masterKeyPair,
            lookAhead: lookAhead, maxFailedAttempts: maxFailedAttempts, failureBlockDuration: failureBlockDuration,
            autoCommit: autoCommit)
    }
}
