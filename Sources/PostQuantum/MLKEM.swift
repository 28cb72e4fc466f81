import CPostQuantum
import SecureCore

/// ML-KEM (FIPS 203), served by the audited C target `CPostQuantum`: key generation from the
/// 64-byte seed `d ‖ z`, encapsulation, and decapsulation with implicit rejection. Seeds,
/// decapsulation keys and shared secrets live in secure memory; encapsulation keys and
/// ciphertexts are public.
public enum MLKEM {
    /// A parameter set.
    public enum ParameterSet: Sendable, CaseIterable {
        /// ML-KEM-768 (NIST category 3; PowerAuth `EC_P384_ML_L3`).
        case mlkem768
        /// ML-KEM-1024 (category 5; `EC_P384_ML_L5`).
        case mlkem1024

        var c: pq_mlkem_param { self == .mlkem768 ? PQ_MLKEM_768 : PQ_MLKEM_1024 }
        /// Bytes of an encapsulation key (1,184 or 1,568).
        public var encapsulationKeyByteCount: Int { pq_mlkem_ek_bytes(c) }
        /// Bytes of an expanded decapsulation key (2,400 or 3,168).
        public var decapsulationKeyByteCount: Int { pq_mlkem_dk_bytes(c) }
        /// Bytes of a ciphertext (1,088 or 1,568).
        public var ciphertextByteCount: Int { pq_mlkem_ct_bytes(c) }
        /// The last arc of the algorithm's OID `2.16.840.1.101.3.4.4.n`.
        var oidLeaf: UInt8 { self == .mlkem768 ? 2 : 3 }
    }

    /// Bytes of a key-generation seed `d ‖ z`.
    public static let seedByteCount = Int(PQ_MLKEM_SEED_BYTES)
    /// Bytes of a shared secret.
    public static let sharedSecretByteCount = Int(PQ_MLKEM_SS_BYTES)

    /// A decapsulation key with its encapsulation key.
    public struct KeyPair: Sendable {
        /// The parameter set.
        public let parameterSet: ParameterSet
        /// The encapsulation key (public), raw.
        public let encapsulationKey: [UInt8]
        /// The expanded decapsulation key, in secure memory.
        public let decapsulationKey: SecureBytes

        /// A new key pair from fresh randomness.
        /// - Parameter parameterSet: the parameter set.
        /// - Throws: ``PostQuantumError/secureMemory(_:)``.
        public static func generate(_ parameterSet: ParameterSet) throws(PostQuantumError) -> KeyPair {
            let seed = try secure { () throws(SecureCoreError) in try SecureBytes.random(count: seedByteCount) }
            defer { seed.destroy() }
            return try KeyPair(parameterSet, seed: seed)
        }

        /// The key pair of a seed (`ML-KEM.KeyGen_internal(d, z)`); deterministic.
        /// - Parameters:
        ///   - parameterSet: the parameter set.
        ///   - seed: 64 bytes, `d ‖ z`.
        /// - Throws: ``PostQuantumError/invalidSize(expected:actual:)``, ``PostQuantumError/secureMemory(_:)``.
        public init(_ parameterSet: ParameterSet, seed: SecureBytes) throws(PostQuantumError) {
            guard seed.count == seedByteCount else { throw .invalidSize(expected: seedByteCount, actual: seed.count) }
            var ek = [UInt8](repeating: 0, count: parameterSet.encapsulationKeyByteCount)
            let dk = try secure { () throws(SecureCoreError) in
                try SecureBytes(count: parameterSet.decapsulationKeyByteCount)
            }
            let status = seed.withUnsafeBytes { s in
                dk.withUnsafeMutableBytes { d in
                    ek.withUnsafeMutableBufferPointer { e in
                        pq_mlkem_keygen(
                            parameterSet.c, s.baseAddress!.assumingMemoryBound(to: UInt8.self), e.baseAddress!,
                            d.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
            guard status == PQ_OK else {
                dk.destroy()
                throw .invalidKey
            }
            self.parameterSet = parameterSet
            encapsulationKey = ek
            decapsulationKey = dk
        }

        /// The shared secret of a ciphertext (`ML-KEM.Decaps`). A ciphertext of the right size
        /// always gives a secret: one that was not made for this key gives the implicit-rejection
        /// secret, which matches nothing the sender has.
        /// - Parameter ciphertext: the ciphertext.
        /// - Returns: 32 bytes in secure memory.
        /// - Throws: ``PostQuantumError/invalidSize(expected:actual:)``, ``PostQuantumError/invalidKey``
        ///   (the decapsulation key fails its hash check), ``PostQuantumError/secureMemory(_:)``.
        public func decapsulate(_ ciphertext: [UInt8]) throws(PostQuantumError) -> SecureBytes {
            guard ciphertext.count == parameterSet.ciphertextByteCount else {
                throw .invalidSize(expected: parameterSet.ciphertextByteCount, actual: ciphertext.count)
            }
            let secret = try secure { () throws(SecureCoreError) in try SecureBytes(count: sharedSecretByteCount) }
            let status = decapsulationKey.withUnsafeBytes { d in
                secret.withUnsafeMutableBytes { s in
                    pq_mlkem_decaps(
                        parameterSet.c, d.baseAddress!.assumingMemoryBound(to: UInt8.self), d.count, ciphertext,
                        ciphertext.count, s.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
            guard status == PQ_OK else {
                secret.destroy()
                throw .invalidKey
            }
            return secret
        }

        /// The encapsulation key as a SubjectPublicKeyInfo (what PowerAuth V4 sends).
        public var encapsulationKeyInfo: [UInt8] {
            SubjectPublicKeyInfo.encode(encapsulationKey, arc: 4, leaf: parameterSet.oidLeaf)
        }

        /// Destroys the decapsulation key.
        public func destroy() { decapsulationKey.destroy() }
    }

    /// Encapsulates a fresh shared secret to an encapsulation key (`ML-KEM.Encaps`).
    /// - Parameters:
    ///   - parameterSet: the parameter set.
    ///   - encapsulationKey: the recipient's key, raw.
    /// - Returns: the ciphertext (public) and the 32-byte shared secret (secure memory).
    /// - Throws: ``PostQuantumError/invalidSize(expected:actual:)``, ``PostQuantumError/invalidKey``
    ///   (FIPS 203's modulus check), ``PostQuantumError/secureMemory(_:)``.
    public static func encapsulate(_ parameterSet: ParameterSet, to encapsulationKey: [UInt8])
        throws(PostQuantumError) -> (ciphertext: [UInt8], sharedSecret: SecureBytes)
    {
        try encapsulate(parameterSet, to: encapsulationKey, message: nil)
    }

    /// ``encapsulate(_:to:)`` with the caller's 32-byte `m` (`ML-KEM.Encaps_internal`): for known
    /// answers and tests only; a reused `m` gives the same secret.
    /// - Parameters:
    ///   - parameterSet: the parameter set.
    ///   - encapsulationKey: the recipient's key, raw.
    ///   - message: 32 bytes, or `nil` for fresh randomness.
    /// - Returns: the ciphertext and the shared secret.
    /// - Throws: as ``encapsulate(_:to:)``.
    public static func encapsulate(_ parameterSet: ParameterSet, to encapsulationKey: [UInt8], message: SecureBytes?)
        throws(PostQuantumError) -> (ciphertext: [UInt8], sharedSecret: SecureBytes)
    {
        guard encapsulationKey.count == parameterSet.encapsulationKeyByteCount else {
            throw .invalidSize(expected: parameterSet.encapsulationKeyByteCount, actual: encapsulationKey.count)
        }
        if let message, message.count != Int(PQ_MLKEM_MSG_BYTES) {
            throw .invalidSize(expected: Int(PQ_MLKEM_MSG_BYTES), actual: message.count)
        }
        var ciphertext = [UInt8](repeating: 0, count: parameterSet.ciphertextByteCount)
        let secret = try secure { () throws(SecureCoreError) in try SecureBytes(count: sharedSecretByteCount) }
        let status = secret.withUnsafeMutableBytes { s in
            ciphertext.withUnsafeMutableBufferPointer { c in
                let out = s.baseAddress!.assumingMemoryBound(to: UInt8.self)
                guard let message else {
                    return pq_mlkem_encaps(
                        parameterSet.c, encapsulationKey, encapsulationKey.count, c.baseAddress!, out)
                }
                return message.withUnsafeBytes { m in
                    pq_mlkem_encaps_derand(
                        parameterSet.c, encapsulationKey, encapsulationKey.count,
                        m.baseAddress!.assumingMemoryBound(to: UInt8.self), c.baseAddress!, out)
                }
            }
        }
        guard status == PQ_OK else {
            secret.destroy()
            throw .invalidKey
        }
        return (ciphertext, secret)
    }

    /// The raw encapsulation key of a SubjectPublicKeyInfo.
    /// - Parameters:
    ///   - parameterSet: the parameter set the key must be of.
    ///   - der: the DER.
    /// - Returns: the raw key.
    /// - Throws: ``PostQuantumError/malformedPublicKeyInfo``.
    public static func encapsulationKey(_ parameterSet: ParameterSet, fromPublicKeyInfo der: [UInt8])
        throws(PostQuantumError) -> [UInt8]
    {
        try SubjectPublicKeyInfo.decode(
            der, arc: 4, leaf: parameterSet.oidLeaf, length: parameterSet.encapsulationKeyByteCount)
    }
}

/// Runs a secure-memory step and reports its error as ours.
func secure<R>(_ body: () throws(SecureCoreError) -> R) throws(PostQuantumError) -> R {
    do throws(SecureCoreError) {
        return try body()
    } catch {
        throw .secureMemory(error)
    }
}

extension MLKEM.KeyPair: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The parameter set only: the decapsulation key is redacted.
    public var description: String { "MLKEM.KeyPair(\(parameterSet), decapsulation key redacted)" }
    /// As ``description``.
    public var debugDescription: String { description }
    /// The parameter set only.
    public var customMirror: Mirror { Mirror(self, children: ["parameterSet": parameterSet], displayStyle: .struct) }
}
