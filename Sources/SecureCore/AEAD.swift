internal import CSecureCore

/// Authenticated encryption with associated data: XChaCha20-Poly1305 by
/// default (random 192-bit nonces are safe), AES-256-GCM where the CPU has
/// AES-NI. Plaintexts and keys stay in secure memory; ciphertexts are public.
///
/// ```swift
/// let key = try SecureBytes.random(count: 32)
/// let box = try AEAD.seal(secret, using: key, associatedData: header)
/// let opened = try AEAD.open(box, using: key, associatedData: header)
/// ```
public enum AEAD {
    /// The algorithms on offer.
    public enum Algorithm: String, Sendable, Codable, CaseIterable {
        /// XChaCha20-Poly1305 (IETF construction): 32-byte key, 24-byte nonce.
        case xChaCha20Poly1305
        /// AES-256-GCM: 32-byte key, 12-byte nonce; needs AES-NI and PCLMUL.
        case aes256GCM

        /// Nonce size in bytes.
        public var nonceByteCount: Int { spc_aead_nonce_bytes(cValue) }

        /// Whether this machine can run the algorithm.
        public var isAvailable: Bool { CoreRuntime.isReady && spc_aead_available(cValue) == 1 }

        var cValue: Int32 {
            switch self {
            case .xChaCha20Poly1305: SPC_AEAD_XCHACHA20POLY1305
            case .aes256GCM: SPC_AEAD_AES256GCM
            }
        }
    }

    /// Key size in bytes (both algorithms).
    public static let keyByteCount = Int(SPC_AEAD_KEY_BYTES)
    /// Tag size in bytes, included at the end of ``SealedBox/ciphertext``.
    public static let tagByteCount = Int(SPC_AEAD_TAG_BYTES)

    /// The public result of sealing: algorithm, nonce and ciphertext (tag included).
    public struct SealedBox: Sendable, Hashable, Codable {
        /// The algorithm that sealed it.
        public var algorithm: Algorithm
        /// The nonce, never to be reused with the same key.
        public var nonce: [UInt8]
        /// Ciphertext followed by the 16-byte tag.
        public var ciphertext: [UInt8]

        /// Reassembles a box read from storage.
        public init(algorithm: Algorithm, nonce: [UInt8], ciphertext: [UInt8]) {
            self.algorithm = algorithm
            self.nonce = nonce
            self.ciphertext = ciphertext
        }
    }

    /// Encrypts and authenticates under a fresh random nonce.
    /// - Parameters:
    ///   - plaintext: the secret, or `nil` for the empty message.
    ///   - key: 32 bytes.
    ///   - associatedData: authenticated, not encrypted (a header, a context label).
    ///   - algorithm: default XChaCha20-Poly1305.
    /// - Returns: the sealed box.
    /// - Throws: ``SecureCoreError/invalidKeyOrNonceSize``, ``SecureCoreError/unsupported``,
    ///   ``SecureCoreError/destroyed``.
    public static func seal(
        _ plaintext: SecureBytes?, using key: SecureBytes, associatedData: [UInt8] = [],
        algorithm: Algorithm = .xChaCha20Poly1305
    ) throws(SecureCoreError) -> SealedBox {
        let nonce = try SecureRandom.bytes(count: algorithm.nonceByteCount)
        return try seal(plaintext, using: key, nonce: nonce, associatedData: associatedData, algorithm: algorithm)
    }

    /// Seals with a caller-chosen nonce. For known-answer tests only: a
    /// repeated nonce under one key destroys confidentiality and integrity.
    @_spi(Testing)
    public static func seal(
        _ plaintext: SecureBytes?, using key: SecureBytes, nonce: [UInt8], associatedData: [UInt8],
        algorithm: Algorithm
    ) throws(SecureCoreError) -> SealedBox {
        var ciphertext = [UInt8](repeating: 0, count: (plaintext?.count ?? 0) + tagByteCount)
        // Key and plaintext locked in the global order (and once if they are the same object).
        try withHandles(key, plaintext) { (k: OpaquePointer, m: OpaquePointer?) throws(SecureCoreError) in
            try nonce.withUnsafeBufferPointer { (n) throws(SecureCoreError) in
                try associatedData.withUnsafeBufferPointer { (ad) throws(SecureCoreError) in
                    try ciphertext.withUnsafeMutableBufferPointer { (c) throws(SecureCoreError) in
                        guard let nonceStart = n.baseAddress else {
                            throw .invalidKeyOrNonceSize
                        }
                        try check(
                            spc_aead_seal(
                                algorithm.cValue, k, nonceStart, n.count, m, ad.baseAddress, ad.count,
                                c.baseAddress!),
                            argument: .invalidKeyOrNonceSize)
                    }
                }
            }
        }
        return SealedBox(algorithm: algorithm, nonce: nonce, ciphertext: ciphertext)
    }

    /// Verifies and decrypts.
    /// - Returns: the plaintext in secure memory, or `nil` for the empty message.
    /// - Throws: ``SecureCoreError/authenticationFailed`` (wrong key, nonce or
    ///   associated data, or tampering — deliberately not said which),
    ///   ``SecureCoreError/invalidKeyOrNonceSize``, ``SecureCoreError/unsupported``.
    public static func open(
        _ box: SealedBox, using key: SecureBytes, associatedData: [UInt8] = []
    ) throws(SecureCoreError) -> SecureBytes? {
        let opened: OpaquePointer? = try key.withHandle { (k) throws(SecureCoreError) in
            try box.nonce.withUnsafeBufferPointer { (n) throws(SecureCoreError) in
                try box.ciphertext.withUnsafeBufferPointer { (c) throws(SecureCoreError) in
                    try associatedData.withUnsafeBufferPointer { (ad) throws(SecureCoreError) -> OpaquePointer? in
                        var out: OpaquePointer?
                        guard let nonceStart = n.baseAddress else { throw .invalidKeyOrNonceSize }
                        guard let cipherStart = c.baseAddress else { throw .authenticationFailed }
                        try check(
                            spc_aead_open(
                                box.algorithm.cValue, k, nonceStart, n.count, cipherStart, c.count,
                                ad.baseAddress, ad.count, &out),
                            argument: .invalidKeyOrNonceSize)
                        return out
                    }
                }
            }
        }
        return opened.map { SecureBytes(adopting: $0) }
    }
}
