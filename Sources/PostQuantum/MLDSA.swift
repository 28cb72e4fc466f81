import CPostQuantum
import SecureCore

/// ML-DSA (FIPS 204, "pure" signing with a context string), served by the audited C target
/// `CPostQuantum`: key generation from the 32-byte seed, hedged or deterministic signing, and
/// verification with every input check of the standard. Seeds and signing keys live in secure
/// memory; public keys and signatures are public.
public enum MLDSA {
    /// A parameter set.
    public enum ParameterSet: Sendable, CaseIterable {
        /// ML-DSA-65 (NIST category 3; PowerAuth `EC_P384_ML_L3`).
        case mldsa65
        /// ML-DSA-87 (category 5; `EC_P384_ML_L5`).
        case mldsa87

        var c: pq_mldsa_param { self == .mldsa65 ? PQ_MLDSA_65 : PQ_MLDSA_87 }
        /// Bytes of a public key (1,952 or 2,592).
        public var publicKeyByteCount: Int { pq_mldsa_pk_bytes(c) }
        /// Bytes of a signing key (4,032 or 4,896).
        public var signingKeyByteCount: Int { pq_mldsa_sk_bytes(c) }
        /// Bytes of a signature (3,309 or 4,627).
        public var signatureByteCount: Int { pq_mldsa_sig_bytes(c) }
        /// The last arc of the algorithm's OID `2.16.840.1.101.3.4.3.n`.
        var oidLeaf: UInt8 { self == .mldsa65 ? 18 : 19 }
    }

    /// Bytes of a key-generation seed ξ.
    public static let seedByteCount = Int(PQ_MLDSA_SEED_BYTES)
    /// The longest context string.
    public static let maximumContextByteCount = Int(PQ_MLDSA_CTX_MAX)

    /// How a signature draws its per-signature randomness `rnd`.
    public enum Variant: Sendable {
        /// Fresh randomness (FIPS 204's default; resists fault and side-channel attacks better).
        case hedged
        /// `rnd` all zero: the same message gives the same signature (known answers).
        case deterministic
    }

    /// A signing key with its public key.
    public struct KeyPair: Sendable {
        /// The parameter set.
        public let parameterSet: ParameterSet
        /// The public key, raw.
        public let publicKey: [UInt8]
        /// The signing key, in secure memory.
        public let signingKey: SecureBytes

        /// A new key pair from fresh randomness.
        /// - Parameter parameterSet: the parameter set.
        /// - Throws: ``PostQuantumError/secureMemory(_:)``.
        public static func generate(_ parameterSet: ParameterSet) throws(PostQuantumError) -> KeyPair {
            let seed = try secure { () throws(SecureCoreError) in try SecureBytes.random(count: seedByteCount) }
            defer { seed.destroy() }
            return try KeyPair(parameterSet, seed: seed)
        }

        /// The key pair of a seed (`ML-DSA.KeyGen_internal(ξ)`); deterministic.
        /// - Parameters:
        ///   - parameterSet: the parameter set.
        ///   - seed: 32 bytes.
        /// - Throws: ``PostQuantumError/invalidSize(expected:actual:)``, ``PostQuantumError/secureMemory(_:)``.
        public init(_ parameterSet: ParameterSet, seed: SecureBytes) throws(PostQuantumError) {
            guard seed.count == seedByteCount else { throw .invalidSize(expected: seedByteCount, actual: seed.count) }
            var pk = [UInt8](repeating: 0, count: parameterSet.publicKeyByteCount)
            let sk = try secure { () throws(SecureCoreError) in try SecureBytes(count: parameterSet.signingKeyByteCount)
            }
            let status = seed.withUnsafeBytes { s in
                sk.withUnsafeMutableBytes { k in
                    pk.withUnsafeMutableBufferPointer { p in
                        pq_mldsa_keygen(
                            parameterSet.c, s.baseAddress!.assumingMemoryBound(to: UInt8.self), p.baseAddress!,
                            k.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
            }
            guard status == PQ_OK else {
                sk.destroy()
                throw .invalidKey
            }
            self.parameterSet = parameterSet
            publicKey = pk
            signingKey = sk
        }

        /// Signs `message` under `context` (`ML-DSA.Sign`, pure).
        /// - Parameters:
        ///   - message: the message.
        ///   - context: at most 255 bytes; empty by default.
        ///   - variant: hedged (default) or deterministic.
        /// - Returns: the signature.
        /// - Throws: ``PostQuantumError/invalidSize(expected:actual:)`` (context), ``PostQuantumError/invalidKey``.
        public func sign(_ message: [UInt8], context: [UInt8] = [], variant: Variant = .hedged)
            throws(PostQuantumError) -> [UInt8]
        {
            guard context.count <= maximumContextByteCount else {
                throw .invalidSize(expected: maximumContextByteCount, actual: context.count)
            }
            var signature = [UInt8](repeating: 0, count: parameterSet.signatureByteCount)
            let zero = [UInt8](repeating: 0, count: Int(PQ_MLDSA_RND_BYTES))
            let status = signingKey.withUnsafeBytes { k in
                signature.withUnsafeMutableBufferPointer { s in
                    context.withUnsafeBufferPointer { ctx in
                        zero.withUnsafeBufferPointer { rnd in
                            pq_mldsa_sign(
                                parameterSet.c, k.baseAddress!.assumingMemoryBound(to: UInt8.self), k.count, message,
                                message.count, ctx.baseAddress, ctx.count,
                                variant == .deterministic ? rnd.baseAddress : nil, s.baseAddress!)
                        }
                    }
                }
            }
            guard status == PQ_OK else { throw .invalidKey }
            return signature
        }

        /// The public key as a SubjectPublicKeyInfo (what PowerAuth V4 sends).
        public var publicKeyInfo: [UInt8] { SubjectPublicKeyInfo.encode(publicKey, arc: 3, leaf: parameterSet.oidLeaf) }

        /// Destroys the signing key.
        public func destroy() { signingKey.destroy() }
    }

    /// Whether `signature` is a valid signature of `message` under `context` by `publicKey`
    /// (`ML-DSA.Verify`). A key, signature or context of the wrong size is simply not valid.
    /// - Parameters:
    ///   - signature: the signature.
    ///   - message: the message.
    ///   - context: the context string; empty by default.
    ///   - publicKey: the raw public key.
    ///   - parameterSet: the parameter set.
    /// - Returns: whether it verifies.
    public static func isValid(
        signature: [UInt8], of message: [UInt8], context: [UInt8] = [], publicKey: [UInt8],
        _ parameterSet: ParameterSet
    ) -> Bool {
        context.withUnsafeBufferPointer { ctx in
            pq_mldsa_verify(
                parameterSet.c, publicKey, publicKey.count, message, message.count, ctx.baseAddress, ctx.count,
                signature, signature.count) == PQ_OK
        }
    }

    /// The SubjectPublicKeyInfo of a raw public key (the form PowerAuth V4 sends).
    /// - Parameters:
    ///   - parameterSet: the key's parameter set.
    ///   - publicKey: the raw FIPS 204 public key.
    /// - Returns: the DER.
    public static func publicKeyInfo(_ parameterSet: ParameterSet, publicKey: [UInt8]) -> [UInt8] {
        SubjectPublicKeyInfo.encode(publicKey, arc: 3, leaf: parameterSet.oidLeaf)
    }

    /// The raw public key of a SubjectPublicKeyInfo.
    /// - Parameters:
    ///   - parameterSet: the parameter set the key must be of.
    ///   - der: the DER.
    /// - Returns: the raw key.
    /// - Throws: ``PostQuantumError/malformedPublicKeyInfo``.
    public static func publicKey(_ parameterSet: ParameterSet, fromPublicKeyInfo der: [UInt8])
        throws(PostQuantumError) -> [UInt8]
    {
        try SubjectPublicKeyInfo.decode(
            der, arc: 3, leaf: parameterSet.oidLeaf, length: parameterSet.publicKeyByteCount)
    }
}

extension MLDSA.KeyPair: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The parameter set only: the signing key is redacted.
    public var description: String { "MLDSA.KeyPair(\(parameterSet), signing key redacted)" }
    /// As ``description``.
    public var debugDescription: String { description }
    /// The parameter set only.
    public var customMirror: Mirror { Mirror(self, children: ["parameterSet": parameterSet], displayStyle: .struct) }
}
